package compact

import (
	"slices"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// A cached object's annotations are held as a slice of keys and values, not as ObjectMeta's map:
// a Go map of strings takes a group of eight entries however few it holds, about 340 bytes, and
// a child metacel writes has one or two annotations (its hashes), so the map was most of what
// they cost. The runtime reads a cached object's annotations rarely (a sync decodes the object),
// so GetAnnotations builds a map at each call; its labels, which the indexers and event handlers
// read at every event, stay a map.

// annotationPairs are annotations as a cached object holds them: keys and values in turn, sorted
// by key.
type annotationPairs []string

// pairsOf is a map's keys and values in turn, sorted by key; nil for none.
func pairsOf(m map[string]string) annotationPairs {
	if len(m) == 0 {
		return nil
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	pairs := make(annotationPairs, 0, 2*len(m))
	for _, k := range keys {
		pairs = append(pairs, k, m[k])
	}
	return pairs
}

// GetAnnotations implements metav1.Object: a map of the object's annotations, the caller's own
// (nil when none).
func (o *heldMeta) GetAnnotations() map[string]string {
	if len(o.annotations) == 0 {
		return nil
	}
	m := make(map[string]string, len(o.annotations)/2)
	for i := 0; i < len(o.annotations); i += 2 {
		m[o.annotations[i]] = o.annotations[i+1]
	}
	return m
}

// SetAnnotations implements metav1.Object.
func (o *heldMeta) SetAnnotations(annotations map[string]string) {
	o.annotations = pairsOf(annotations)
}

// GetObjectMeta implements metav1.ObjectMetaAccessor with the object itself.
func (o *Object) GetObjectMeta() metav1.Object { return o }
