package compact

import (
	"hash/maphash"
	"slices"
)

// The children of one template carry the same labels but for those naming their parent (its
// name as an app label, its UID as metacel's parent-uid label): a Pod's seven labels took a slice
// of 14 strings, 224 bytes, in each Pod. So a cached object's labels hold a value that is the
// object's own name or UID, or its controlling owner's, as a marker, and labels equal once marked
// are held once: sharedLabels keeps the last labels it saw in each of its slots, as the table
// shared does for bodies (sharedbody.go). The markers are control characters, which no label
// value holds (the API server allows letters, digits, '-', '_' and '.'); every read of a value
// (LabelSet, GetLabels, a decode) gives the name it stands for, and a set of the names marked
// (SetName, SetUID, SetOwnerReferences) expands the labels first, so that they keep the values
// the API server sent.

// ownUIDMarker stands for the object's own UID in its labels; ownNameMarker (sharedbody.go) for
// its name, ownerNameMarker and ownerUIDMarker (managed.go) for its controlling owner's.
const ownUIDMarker = "\x03"

var sharedLabels = newSharedTable(hashPairs, slices.Equal[pairs])

func hashPairs(seed maphash.Seed, p pairs) uint64 {
	var h maphash.Hash
	h.SetSeed(seed)
	for _, s := range p {
		h.WriteString(s)
		h.WriteByte(0)
	}
	return h.Sum64()
}

// setLabels replaces the object's labels with p (its own: its values are marked in place), or
// with the labels held equal to them once marked.
func (o *heldMeta) setLabels(p pairs) {
	if len(p) == 0 {
		o.labels = nil
		return
	}
	if !o.labelNames().mark(p) {
		o.labels = p // nothing of it names the object: objects alike are few
		return
	}
	held, ok := sharedLabels.lookup(p)
	if !ok {
		sharedLabels.hold(p)
		held = p
	}
	o.labels = held
}

// labelNames are the names a cached object's label values may be marked for, each with its
// marker: its own name and UID, its controlling owner's.
type labelNames [4][2]string

// labelNames are the object's names, as its labels are marked for them.
func (o *heldMeta) labelNames() labelNames {
	n := labelNames{{o.name, ownNameMarker}, {string(o.uid), ownUIDMarker}}
	if c := controllingOwner(o.ownerReferences); c != nil {
		n[2], n[3] = [2]string{c.Name, ownerNameMarker}, [2]string{string(c.UID), ownerUIDMarker}
	}
	return n
}

// mark replaces, in p, the values that are one of the names by their markers, and reports
// whether it replaced any.
func (n labelNames) mark(p pairs) bool {
	marked := false
	for i := 1; i < len(p); i += 2 {
		for _, name := range n {
			if name[0] != "" && p[i] == name[0] {
				p[i], marked = name[1], true
				break
			}
		}
	}
	return marked
}

// value is the value a label holds: the name a marker stands for, else v.
func (n labelNames) value(v string) string {
	if !isMarker(v) {
		return v
	}
	for _, name := range n {
		if v == name[1] && name[0] != "" {
			return name[0]
		}
	}
	return v
}

// expand returns p with each marker replaced by the name it stands for: p itself when it holds
// none.
func (n labelNames) expand(p pairs) pairs {
	var out pairs
	for i := 1; i < len(p); i += 2 {
		if v := n.value(p[i]); v != p[i] {
			if out == nil {
				out = slices.Clone(p)
			}
			out[i] = v
		}
	}
	if out == nil {
		return p
	}
	return out
}

// isMarker reports whether a label value is a marker.
func isMarker(v string) bool { return len(v) == 1 && v[0] <= ownUIDMarker[0] }

// labelValue is the value a label of the object holds: the name a marker stands for, else v.
func (o *heldMeta) labelValue(v string) string {
	if !isMarker(v) {
		return v
	}
	return o.labelNames().value(v)
}

// unmarkLabels makes the object's labels its own, expanded: before a name they mark changes.
func (o *heldMeta) unmarkLabels() { o.labels = o.labelNames().expand(o.labels) }
