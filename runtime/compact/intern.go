package compact

import (
	"sync"
	"sync/atomic"
	"unique"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"metacel.dev/metacel/runtime/contract"
)

// A cache holds the same few label and annotation keys, owner kinds and metacel's own label
// values (its name, the policy's, the child's id) on every object: decoded, each object holds its
// own copy of each, about 300 bytes of a child's metadata. intern makes every object's copy the
// one canonical string, so that the cache holds each once; the maps keep their shape (an
// assignment to a key present replaces the key with the one assigned). Values that differ from
// object to object (names, UIDs, hashes) are left as they are: interning them would only add a
// table entry.
func intern(m *metav1.ObjectMeta) {
	for k, v := range m.Labels {
		if internedValue(k) {
			v = canonical(v)
		} else {
			v = sameAsMeta(m, v)
		}
		m.Labels[canonical(k)] = v
	}
	for k, v := range m.Annotations {
		m.Annotations[canonical(k)] = v
	}
	for i := range m.OwnerReferences {
		r := &m.OwnerReferences[i]
		r.APIVersion, r.Kind = canonical(r.APIVersion), canonical(r.Kind)
	}
	m.Namespace = canonical(m.Namespace)
}

// sameAsMeta returns the object's own name or UID, or an owner's, when v is one of them, else v:
// a child's labels name its parent (the parent's UID, its name as an app label), which its owner
// reference holds already.
func sameAsMeta(m *metav1.ObjectMeta, v string) string {
	for i := range m.OwnerReferences {
		switch r := &m.OwnerReferences[i]; v {
		case string(r.UID):
			return string(r.UID)
		case r.Name:
			return r.Name
		}
	}
	switch v {
	case m.Name:
		return m.Name
	case string(m.UID):
		return string(m.UID)
	}
	return v
}

// internedValue reports whether the values of a label repeat across objects: metacel's own, but
// the parent's UID.
func internedValue(key string) bool {
	switch key {
	case contract.LabelManagedBy, contract.LabelChildPolicyName, contract.LabelChildPolicyLegacy, contract.LabelChildID, contract.LabelShardSlot:
		return true
	}
	return false
}

// canonical returns the one copy of s that the caches share. Package unique keeps a canonical
// value only while a handle to it is alive, and an object holds the string, not the handle: held
// by nobody, the copy was gone at the next garbage collection, and the objects decoded after it
// each held a copy again (a Pod's seven label keys, 200 bytes). So the strings interned are held
// here, up to maxHeldStrings of them (keys and kinds are a few hundred in a cluster; past the
// bound a string is still interned, only not held).
func canonical(s string) string {
	h := unique.Make(s)
	if _, ok := heldStrings.Load(h); !ok && heldCount.Load() < maxHeldStrings {
		if _, loaded := heldStrings.LoadOrStore(h, struct{}{}); !loaded {
			heldCount.Add(1)
		}
	}
	return h.Value()
}

// maxHeldStrings bounds the strings canonical holds: 65,536 take about 6 MB at most.
const maxHeldStrings = 1 << 16

var (
	heldStrings sync.Map // unique.Handle[string] → struct{}
	heldCount   atomic.Int64
)
