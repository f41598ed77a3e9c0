package compact

import (
	"unique"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"metacel.dev/metacel/runtime/contract"
)

// A cache holds the same few label and annotation keys, owner kinds and metacel's own label
// values (its name, the policy's, the child's id) on every object: decoded, each object holds its
// own copy of each, about 300 bytes of a child's metadata. intern makes every object's copy the
// one canonical string (package unique), so that the cache holds each once; the maps keep their
// shape (an assignment to a key present replaces the key with the one assigned). Values that
// differ from object to object (names, UIDs, hashes) are left as they are: interning them would
// only add a table entry.
func intern(m *metav1.ObjectMeta) {
	for k, v := range m.Labels {
		if internedValue(k) {
			v = unique.Make(v).Value()
		}
		m.Labels[unique.Make(k).Value()] = v
	}
	for k, v := range m.Annotations {
		m.Annotations[unique.Make(k).Value()] = v
	}
	for i := range m.OwnerReferences {
		r := &m.OwnerReferences[i]
		r.APIVersion, r.Kind = unique.Make(r.APIVersion).Value(), unique.Make(r.Kind).Value()
	}
	m.Namespace = unique.Make(m.Namespace).Value()
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
