package compact

import (
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"metacel.dev/metacel/runtime/apply"
)

// LastApplied is kubectl's copy of the whole object as last applied by it.
const LastApplied = "kubectl.kubernetes.io/last-applied-configuration"

// Slim drops from an object what the runtime never reads and that can weigh as much as the
// object itself: kubectl's last-applied-configuration annotation, and the fields (fieldsV1) of
// every field manager but metacel's. Other managers' entries stay, with their name, operation and
// time (a drift fight names the other writer). metacel's own entries, which say what it applied,
// stay whole. It returns u.
func Slim(u *unstructured.Unstructured) *unstructured.Unstructured {
	meta, _ := u.Object["metadata"].(map[string]any)
	if meta == nil {
		return u
	}
	if annotations, _ := meta["annotations"].(map[string]any); annotations[LastApplied] != nil {
		delete(annotations, LastApplied)
		if len(annotations) == 0 {
			delete(meta, "annotations")
		}
	}
	entries, _ := meta["managedFields"].([]any)
	for _, e := range entries {
		if m, ok := e.(map[string]any); ok && m["manager"] != apply.FieldManager {
			delete(m, "fieldsV1")
		}
	}
	return u
}
