package controller

import (
	"hash/maphash"
	"slices"
	"sync"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// unchanged remembers, per parent, a fingerprint of the inputs of its last successful sync: the
// resourceVersions of the parent, of its observed children and of the related objects it read.
// Render is a pure function of these inputs (no clock, no randomness), and that sync left the
// cluster as the render wanted it; a sync with the same inputs (a resync, an event replayed by
// an informer) would render and compare the same again, so it is skipped. A write of a sync
// changes the resourceVersion of the object written, which is an input, so a skip never hides
// what a write did; a sync that failed is not remembered. What the inputs do not cover resets
// the memory: a namespace's consent labels (confinement), a new policy (a new controller).
//
// This is what a hand-written controller's resync costs: a look at its caches, no render.
type unchanged struct {
	sync.Mutex
	seed maphash.Seed
	last map[string]uint64 // parent key -> fingerprint
}

// fingerprint hashes the resourceVersions of a sync's inputs: the parent and the policy's objects
// cached for it (their metadata: nothing is decoded), and the related objects it read; ok is
// false when an input has none (an object not from an API server), which is never skipped.
func (u *unchanged) fingerprint(parent metav1.Object, children []metav1.Object, related map[string][]*unstructured.Unstructured) (sum uint64, ok bool) {
	var h maphash.Hash
	h.SetSeed(u.seed)
	versions := make([]string, 0, len(children)+1)
	for _, m := range append([]metav1.Object{parent}, children...) {
		if m.GetResourceVersion() == "" {
			return 0, false
		}
		versions = append(versions, string(m.GetUID())+"@"+m.GetResourceVersion())
	}
	slices.Sort(versions[1:]) // the index yields children in no set order
	for _, v := range versions {
		_, _ = h.WriteString(v)
		_ = h.WriteByte(0)
	}
	ids := make([]string, 0, len(related))
	for id := range related {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	for _, id := range ids {
		_, _ = h.WriteString(id)
		_ = h.WriteByte(1)
		for _, obj := range related[id] {
			if obj.GetResourceVersion() == "" {
				return 0, false
			}
			_, _ = h.WriteString(string(obj.GetUID()) + "@" + obj.GetResourceVersion())
			_ = h.WriteByte(0)
		}
	}
	return h.Sum64(), true
}

// same reports whether the last successful sync of key had these inputs.
func (u *unchanged) same(key string, sum uint64) bool {
	u.Lock()
	defer u.Unlock()
	last, ok := u.last[key]
	return ok && last == sum
}

// remember records the inputs of a successful sync of key.
func (u *unchanged) remember(key string, sum uint64) {
	u.Lock()
	defer u.Unlock()
	if u.last == nil {
		u.last = map[string]uint64{}
	}
	u.last[key] = sum
}

// forget drops what is remembered of key (a failed sync, a parent gone).
func (u *unchanged) forget(key string) {
	u.Lock()
	defer u.Unlock()
	delete(u.last, key)
}

// reset drops everything: an input the fingerprints do not cover changed.
func (u *unchanged) reset() {
	u.Lock()
	defer u.Unlock()
	u.last = nil
}
