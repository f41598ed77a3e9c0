package preview

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
)

// stableUID is the UID an offline parent without one gets: a UUID (version 8, "custom") made of
// the SHA-256 of its group, kind, namespace and name, so that renders of one parent always agree,
// and its children's labels and ownerReferences never hold an empty UID.
func stableUID(obj *unstructured.Unstructured) types.UID {
	gvk := obj.GroupVersionKind()
	sum := sha256.Sum256([]byte("metacel.dev/preview\x00" + gvk.Group + "\x00" + gvk.Kind + "\x00" + obj.GetNamespace() + "\x00" + obj.GetName()))
	b := sum[:16]
	b[6] = b[6]&0x0f | 0x80 // version 8
	b[8] = b[8]&0x3f | 0x80 // RFC 9562 variant
	h := hex.EncodeToString(b)
	return types.UID(h[0:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:32])
}

// completeMetadata gives a parent what the API server gives every object it creates: a UID and
// generation 1. It says what it gave, or "" when the parent had both.
func completeMetadata(obj *unstructured.Unstructured) string {
	var gave string
	if obj.GetUID() == "" {
		obj.SetUID(stableUID(obj))
		gave = fmt.Sprintf("metadata.uid %s (derived from its kind, namespace and name)", obj.GetUID())
	}
	if obj.GetGeneration() == 0 {
		obj.SetGeneration(1)
		if gave != "" {
			gave += " and "
		}
		gave += "metadata.generation 1"
	}
	if gave == "" {
		return ""
	}
	return fmt.Sprintf("%s: gave it %s, as the API server would on create", describe(obj), gave)
}
