package controller

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/klog/v2"

	"metacel.dev/metacel/runtime/apply"
	"metacel.dev/metacel/runtime/contract"
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

// allowWrite says whether metacel may write a child again now: an error (retried with backoff)
// when what it wrote of it has been undone too often lately.
func (s *parentStates) allowWrite(parent *unstructured.Unstructured, child *render.Child, obs *unstructured.Unstructured, now time.Time) error {
	key, id, h := parentKey(parent), render.Identity(child.Object), contentSumOf(child.Object)
	s.mu.Lock()
	defer s.mu.Unlock()
	var st *childWrites
	if p := s.byKey[key]; p != nil {
		st = p.writes.get(id)
	}
	if st == nil || st.written != h {
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

// wroteChild remembers what metacel wrote of a child; undone says that the write re-did what
// another writer had undone (it reverted drift, or created anew a child that was deleted), which
// counts when it re-sends what was written last time.
func (s *parentStates) wroteChild(parent *unstructured.Unstructured, child *render.Child, undone bool, now time.Time) {
	key, id, h := parentKey(parent), render.Identity(child.Object), contentSumOf(child.Object)
	s.mu.Lock()
	defer s.mu.Unlock()
	p := s.stateLocked(key)
	if st := p.writes.get(id); st != nil && st.written == h {
		if undone && !st.deleted {
			st.undone = append(st.undone, now)
		}
		st.deleted = false
		return
	}
	p.writes.set(id, &childWrites{written: h})
}

// deletedToRecreate remembers that metacel deleted a child to recreate it: only a deletion
// metacel did not make counts as the child disappearing. When what it deletes is what it wrote
// last (someone changed a field of a child that is never updated in place), the recreation
// reverts drift, which counts as undone.
func (s *parentStates) deletedToRecreate(parent *unstructured.Unstructured, child *render.Child, now time.Time) {
	key, id, h := parentKey(parent), render.Identity(child.Object), contentSumOf(child.Object)
	s.mu.Lock()
	defer s.mu.Unlock()
	p := s.byKey[key]
	st := p.writesOf(id)
	if st == nil {
		return
	}
	if st.written == h {
		st.undone = append(st.undone, now)
	}
	st.deleted = true
}

func fightError(child *render.Child, obs *unstructured.Unstructured, undone int) error {
	name := child.Object.GetKind() + " " + klog.KObj(child.Object).String()
	if obs == nil {
		return &syncError{reason: contract.ReasonChildKeepsDisappearing, err: fmt.Errorf(
			"%s keeps disappearing: it was deleted %d times within %s after metacel wrote it: metacel backs off; find what deletes it (the garbage collector deletes an object whose ownerReferences name an owner that does not exist; check admission and other controllers)",
			name, undone, fightWindow)}
	}
	return &syncError{reason: contract.ReasonDriftConflict, err: fmt.Errorf(
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

// contentSum is a child's content hash (contentHash) as its 32 bytes, as parentState.writes
// holds one for each child: its hex, a string of 64, took twice that and an allocation of its own.
type contentSum [sha256.Size]byte

func contentSumOf(obj *unstructured.Unstructured) contentSum {
	var sum contentSum
	h := contentHash(obj)
	if len(h) == hex.EncodedLen(len(sum)) {
		if _, err := hex.Decode(sum[:], []byte(h)); err == nil {
			return sum
		}
	}
	return sha256.Sum256([]byte(h)) // not a hash of ours: a hash of it
}

// writesOf returns what metacel last wrote of a child of the parent, nil when nothing (or no
// parent state).
func (p *parentState) writesOf(id string) *childWrites {
	if p == nil {
		return nil
	}
	return p.writes.get(id)
}

// writesByID holds a parent's childWrites by child identity: in a slice searched in order while
// the parent has few children, as most have one or two, in a map beyond: the runtime holds one
// per parent, and a map costs about 250 bytes even for one entry.
type writesByID struct {
	few  []idWrites
	many map[string]*childWrites
}

type idWrites struct {
	id string
	w  *childWrites
}

// fewWrites is how many children's writes a slice holds before a map does.
const fewWrites = 8

func (b *writesByID) get(id string) *childWrites {
	if b.many != nil {
		return b.many[id]
	}
	for _, e := range b.few {
		if e.id == id {
			return e.w
		}
	}
	return nil
}

func (b *writesByID) set(id string, w *childWrites) {
	if b.many != nil {
		b.many[id] = w
		return
	}
	for i := range b.few {
		if b.few[i].id == id {
			b.few[i].w = w
			return
		}
	}
	if len(b.few) < fewWrites {
		b.few = append(b.few, idWrites{id: id, w: w})
		return
	}
	b.many = make(map[string]*childWrites, len(b.few)+1)
	for _, e := range b.few {
		b.many[e.id] = e.w
	}
	b.many[id] = w
	b.few = nil
}
