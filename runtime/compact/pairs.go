package compact

import (
	"maps"
	"slices"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
)

// A cached object's labels and annotations are each held as a slice of keys and values, not as
// ObjectMeta's maps: a Go map of strings takes a group of eight entries however few it holds
// (about 340 bytes with its header), where a child metacel writes has one or two annotations
// (its hashes) and seven labels (its own six and a template's), which a slice holds in 16 bytes a
// string. The keys are interned (intern.go), so a slice holds only their headers; objects alike
// share their labels' (sharedlabels.go), and an object holds its annotations and finalizers in
// one slice (heldMeta.strs). GetLabels and
// GetAnnotations build a map at each call; the indexers and event handlers, which read a label
// at every event, read it through LabelSet (informers.LabelsOf) without one.

// pairs are labels or annotations as a cached object holds them: keys and values in turn,
// sorted by key; nil for none. A pairs is never modified: a copy shares it, a set replaces it.
// Labels' values may be markers (sharedlabels.go): they are read as labels.Labels through the
// object (LabelSet), never as pairs.
type pairs []string

// pairsOf is a map's keys and values in turn, sorted by key; nil for none.
func pairsOf(m map[string]string) pairs {
	if len(m) == 0 {
		return nil
	}
	out := make(pairs, 0, 2*len(m))
	if len(m) > maxSortedInPlace {
		for _, k := range slices.Sorted(maps.Keys(m)) {
			out = append(out, k, m[k])
		}
		return out
	}
	for k, v := range m {
		out = append(out, k, v)
	}
	for i := 2; i < len(out); i += 2 { // an insertion sort of the pairs, in place: no slice of keys
		for j := i; j > 0 && out[j] < out[j-2]; j -= 2 {
			out[j], out[j+1], out[j-2], out[j-1] = out[j-2], out[j-1], out[j], out[j+1]
		}
	}
	return out
}

// maxSortedInPlace is the most pairs pairsOf sorts in place: an object's few labels and
// annotations; more are sorted by their keys.
const maxSortedInPlace = 16

// asMap is the pairs as a map, the caller's own; nil for none.
func (p pairs) asMap() map[string]string {
	if len(p) == 0 {
		return nil
	}
	m := make(map[string]string, len(p)/2)
	for i := 0; i < len(p); i += 2 {
		m[p[i]] = p[i+1]
	}
	return m
}

// Lookup returns the value held for key, and whether there is one. An object has a few labels:
// a scan of them is as fast as a search.
func (p pairs) Lookup(key string) (string, bool) {
	for i := 0; i < len(p); i += 2 {
		if p[i] == key {
			return p[i+1], true
		}
	}
	return "", false
}

// heldStrs are an object's annotations (pairs), then its finalizers, in one slice, where two
// slices took 48 bytes of every object: annotationsEnd is where the annotations end. Never
// modified: a copy shares it, a set replaces it.
type heldStrs struct {
	strs           []string
	annotationsEnd uint32
}

// annotations are the object's annotations, the cache's own, only to be read.
func (h *heldStrs) annotations() pairs { return pairs(h.strs[:h.annotationsEnd:h.annotationsEnd]) }

// finalizers are the object's finalizers, nil for none; their slice cannot grow into the
// strings after them.
func (h *heldStrs) finalizers() []string {
	if int(h.annotationsEnd) == len(h.strs) {
		return nil
	}
	return h.strs[h.annotationsEnd:len(h.strs):len(h.strs)]
}

// setStrs replaces the object's strings with these annotations and finalizers.
func (h *heldStrs) setStrs(annotations pairs, finalizers []string) {
	if len(annotations)+len(finalizers) == 0 {
		h.strs, h.annotationsEnd = nil, 0
		return
	}
	strs := make([]string, 0, len(annotations)+len(finalizers))
	h.strs, h.annotationsEnd = append(append(strs, annotations...), finalizers...), uint32(len(annotations))
}

// GetLabels implements metav1.Object: a map of the object's labels, the caller's own (nil when
// none). LabelSet reads them without one.
func (o *heldMeta) GetLabels() map[string]string {
	if len(o.labels) == 0 {
		return nil
	}
	m := make(map[string]string, len(o.labels)/2)
	for i := 0; i < len(o.labels); i += 2 {
		m[o.labels[i]] = o.labelValue(o.labels[i+1])
	}
	return m
}

// SetLabels implements metav1.Object.
func (o *heldMeta) SetLabels(labels map[string]string) { o.setLabels(pairsOf(labels)) }

// LabelSet is the object's labels, read without a copy (nor an allocation: the object itself,
// as a labelSet): the cache's own, only to be read.
func (o *heldMeta) LabelSet() labels.Labels { return (*labelSet)(o) }

// labelSet is an object's labels as labels.Labels, their markers read as the names they stand
// for.
type labelSet heldMeta

var _ labels.Labels = (*labelSet)(nil)

func (l *labelSet) Has(key string) bool {
	_, ok := (*heldMeta)(l).labels.Lookup(key)
	return ok
}

func (l *labelSet) Get(key string) string {
	v, _ := l.Lookup(key)
	return v
}

func (l *labelSet) Lookup(key string) (string, bool) {
	o := (*heldMeta)(l)
	v, ok := o.labels.Lookup(key)
	return o.labelValue(v), ok
}

// GetAnnotations implements metav1.Object: a map of the object's annotations, the caller's own
// (nil when none).
func (o *heldMeta) GetAnnotations() map[string]string { return o.annotations().asMap() }

// SetAnnotations implements metav1.Object.
func (o *heldMeta) SetAnnotations(annotations map[string]string) {
	o.setStrs(pairsOf(annotations), o.finalizers())
}

// GetObjectMeta implements metav1.ObjectMetaAccessor with the object itself.
func (o *Object) GetObjectMeta() metav1.Object { return o }
