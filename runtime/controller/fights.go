package controller

import (
	"fmt"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"metacel.dev/metacel/runtime/apply"
	"metacel.dev/metacel/runtime/render"
)

// A child that metacel applies again and again with the same content is in a fight: another
// writer (an HPA, another controller, a person) keeps changing fields metacel sets, or something
// keeps deleting it (the garbage collector, when a template names an owner that does not exist).
// Reverting drift is the contract, but not in a loop: past fightLimit undone writes of one child
// within fightWindow, the parent reports the fight (Synced=False, naming the other field manager)
// and metacel stops writing that child until the window has room again, while the sync is retried
// with backoff. What is remembered is only a throttle: a restart starts counting afresh.

const (
	// fightLimit is how many of metacel's writes of one child may be undone within fightWindow.
	fightLimit  = 5
	fightWindow = 5 * time.Minute
)

// Reasons of a fight reported on the parent.
const (
	ReasonDriftConflict          = "DriftConflict"
	ReasonChildKeepsDisappearing = "ChildKeepsDisappearing"
)

// fights remembers, per parent and child, what metacel last wrote and when its writes were undone.
type fights struct {
	sync.Mutex
	byChild map[string]*fight // parent key + " " + child identity
}

type fight struct {
	written string // contentHash
	undone  []time.Time
	// deleted: metacel itself deleted the child it wrote last, to recreate it (Recreate): the
	// create that follows re-does nobody else's undoing
	deleted bool
}

// allow says whether metacel may write a child again now: an error (retried with backoff) when
// what it wrote of it has been undone too often lately.
func (f *fights) allow(parent *unstructured.Unstructured, child *render.Child, obs *unstructured.Unstructured, now time.Time) error {
	f.Lock()
	defer f.Unlock()
	st := f.byChild[parentKey(parent)+" "+render.Identity(child.Object)]
	if st == nil || st.written != contentHash(child.Object) {
		return nil // a first write, or the policy or parent changed what the child should be
	}
	recent := st.undone[:0]
	for _, t := range st.undone {
		if now.Sub(t) < fightWindow {
			recent = append(recent, t)
		}
	}
	st.undone = recent
	if len(recent) >= fightLimit {
		return fightError(child, obs, len(recent))
	}
	return nil
}

// written remembers what metacel wrote of a child; undone says that the write re-did what another
// writer had undone (it reverted drift, or created anew a child that was deleted), which counts
// when it re-sends what was written last time.
func (f *fights) written(parent *unstructured.Unstructured, child *render.Child, undone bool, now time.Time) {
	f.Lock()
	defer f.Unlock()
	if f.byChild == nil {
		f.byChild = map[string]*fight{}
	}
	k := parentKey(parent) + " " + render.Identity(child.Object)
	h := contentHash(child.Object)
	if st := f.byChild[k]; st != nil && st.written == h {
		if undone && !st.deleted {
			st.undone = append(st.undone, now)
		}
		st.deleted = false
		return
	}
	f.byChild[k] = &fight{written: h}
}

// deletedToRecreate remembers that metacel deleted a child to recreate it: only a deletion
// metacel did not make counts as the child disappearing. When what it deletes is what it wrote
// last (someone changed a field of a child that is never updated in place), the recreation
// reverts drift, which counts as undone.
func (f *fights) deletedToRecreate(parent *unstructured.Unstructured, child *render.Child, now time.Time) {
	f.Lock()
	defer f.Unlock()
	st := f.byChild[parentKey(parent)+" "+render.Identity(child.Object)]
	if st == nil {
		return
	}
	if st.written == contentHash(child.Object) {
		st.undone = append(st.undone, now)
	}
	st.deleted = true
}

// forgetParent drops what was remembered of a parent that is gone.
func (f *fights) forgetParent(key string) {
	f.Lock()
	defer f.Unlock()
	for k := range f.byChild {
		if len(k) > len(key) && k[:len(key)+1] == key+" " {
			delete(f.byChild, k)
		}
	}
}

func fightError(child *render.Child, obs *unstructured.Unstructured, undone int) error {
	name := child.Object.GetKind() + " " + render.NamespacedName(child.Object)
	if obs == nil {
		return &syncError{reason: ReasonChildKeepsDisappearing, retry: true, err: fmt.Errorf(
			"%s was deleted %d times within %s after metacel wrote it: metacel backs off; find what deletes it (the garbage collector deletes an object whose ownerReferences name an owner that does not exist; check admission and other controllers)",
			name, undone, fightWindow)}
	}
	return &syncError{reason: ReasonDriftConflict, retry: true, err: fmt.Errorf(
		"%s: field manager %q changed fields this policy sets %d times within %s, and metacel reverted them each time: metacel backs off; stop the other writer from changing them, or remove those fields from the policy",
		name, otherManager(obs), undone, fightWindow)}
}

// otherManager names the field manager, other than metacel, that wrote the object last.
func otherManager(obj *unstructured.Unstructured) string {
	name, last := "unknown", time.Time{}
	for _, mf := range obj.GetManagedFields() {
		if mf.Manager == apply.FieldManager || mf.Subresource != "" {
			continue
		}
		if t := timeOf(mf); name == "unknown" || t.After(last) {
			name, last = mf.Manager, t
		}
	}
	return name
}

func timeOf(mf metav1.ManagedFieldsEntry) time.Time {
	if mf.Time == nil {
		return time.Time{}
	}
	return mf.Time.Time
}
