package controller

import (
	"slices"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"metacel.dev/metacel/runtime/memo"
)

// A controller remembers, per parent (parentState.inputs), a fingerprint of the inputs of its last
// successful sync: the resourceVersions of the parent, of its observed children and of the
// related objects it read. Render is a pure function of these inputs (no clock, no randomness),
// and that sync left the cluster as the render wanted it; a sync with the same inputs (a resync,
// an event replayed by an informer) would render and compare the same again, so it is skipped. A
// write of a sync changes the resourceVersion of the object written, which is an input, so a skip
// never hides what a write did; a sync that failed is not remembered. What the inputs do not
// cover resets the memory: a namespace's consent labels (confinement), a new policy (a new
// controller).
//
// This is what a hand-written controller's resync costs: a look at its caches, no render. After a
// restart, the fingerprints the controller had when it stopped (package memo) are recalled: a
// parent whose inputs match one of them is known as if this process had synced it.

// fingerprint hashes the resourceVersions of a sync's inputs: the parent and the policy's objects
// cached for it (their metadata: nothing is decoded), and the related objects it read; ok is
// false when an input has none (an object not from an API server), which is never skipped.
func fingerprint(parent metav1.Object, children []metav1.Object, related map[string][]*unstructured.Unstructured) (sum uint64, ok bool) {
	h := fnv64a(fnvOffset)
	versions := make([]string, 0, len(children)+1)
	for _, m := range append([]metav1.Object{parent}, children...) {
		if m.GetResourceVersion() == "" {
			return 0, false
		}
		versions = append(versions, string(m.GetUID())+"@"+m.GetResourceVersion())
	}
	slices.Sort(versions[1:]) // the index yields children in no set order
	for _, v := range versions {
		h.writeString(v)
		h.writeByte(0)
	}
	ids := make([]string, 0, len(related))
	for id := range related {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	for _, id := range ids {
		h.writeString(id)
		h.writeByte(1)
		for _, obj := range related[id] {
			if obj.GetResourceVersion() == "" {
				return 0, false
			}
			h.writeString(string(obj.GetUID()) + "@" + obj.GetResourceVersion())
			h.writeByte(0)
		}
	}
	return uint64(h), true
}

// sameInputs reports whether the last successful sync of key had these inputs.
func (s *parentStates) sameInputs(key string, sum uint64) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	p := s.byKey[key]
	return p != nil && p.knowsInputs && p.inputs == sum
}

// rememberInputs records the inputs of a successful sync of key.
func (s *parentStates) rememberInputs(key string, sum uint64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	p := s.stateLocked(key)
	p.inputs, p.knowsInputs = sum, true
}

// forgetInputs drops the inputs remembered of key (a failed sync).
func (s *parentStates) forgetInputs(key string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if p := s.byKey[key]; p != nil {
		p.inputs, p.knowsInputs = 0, false
	}
}

// resetInputs drops the inputs remembered of every parent, and the memo recalled: an input the
// fingerprints do not cover changed.
func (s *parentStates) resetInputs() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, p := range s.byKey {
		p.inputs, p.knowsInputs = 0, false
	}
	s.recalled = nil
}

// recall takes the fingerprints of a memo, before the first sync.
func (s *parentStates) recall(entries memo.Entries) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.recalled = entries
}

// takeRecalled reports whether the memo had these inputs, with the byte kept beside them, and
// then remembers them for key, as if this process had synced it.
func (s *parentStates) takeRecalled(key string, sum uint64) (kept byte, ok bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if kept, ok = s.recalled[sum]; !ok {
		return 0, false
	}
	delete(s.recalled, sum)
	p := s.stateLocked(key)
	p.inputs, p.knowsInputs = sum, true
	return kept, true
}

// fnv64a is the 64-bit FNV-1a hash (hash/fnv's), written here to hash strings without copying
// them into a []byte: a fingerprint must be the same in every process (memos are compared after
// a restart), which rules out hash/maphash and its per-process seed.
type fnv64a uint64

const (
	fnvOffset = 14695981039346656037
	fnvPrime  = 1099511628211
)

func (h *fnv64a) writeString(s string) {
	for i := 0; i < len(s); i++ {
		*h = (*h ^ fnv64a(s[i])) * fnvPrime
	}
}

func (h *fnv64a) writeByte(b byte) {
	*h = (*h ^ fnv64a(b)) * fnvPrime
}
