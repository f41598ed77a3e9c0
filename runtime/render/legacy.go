package render

import (
	"maps"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"metacel.dev/metacel/runtime/contract"
)

// legacyHeld reports whether the observed child of obj's identity was written by a runtime from
// before the content hash (it carries metacel.dev/desired-hash and no content hash) and holds
// obj's content, obj being the policy's content before mark: what such a runtime hashed (the
// content with the bookkeeping the observed child carries) has the hash the child carries. Only
// the child's bookkeeping then differs, and decide patches it instead of writing the child.
func (r *run) legacyHeld(obj *unstructured.Unstructured) bool {
	if len(r.in.Observed) == 0 {
		return false
	}
	observed := r.observedByIdentity()[Identity(obj)]
	if observed == nil || annotation(observed.Object, contract.AnnotationContentHash) != "" {
		return false
	}
	want := annotation(observed.Object, contract.AnnotationDesiredHash)
	return want != "" && objectHash(withLegacyBookkeeping(obj, observed, r.in.Parent)) == want
}

// withLegacyBookkeeping is content as a runtime before the content hash rendered it, with the
// bookkeeping observed carries: metacel's labels, the deletion-policy annotation, the parent's
// controller ownerReference. It copies what it changes; content is not modified.
func withLegacyBookkeeping(content, observed, parent *unstructured.Unstructured) *unstructured.Unstructured {
	obj := maps.Clone(content.Object)
	meta := maps.Clone(obj["metadata"].(map[string]any)) // present: finish checked the name
	obj["metadata"] = meta
	labels, _ := meta["labels"].(map[string]any)
	labels = maps.Clone(labels)
	if labels == nil {
		labels = map[string]any{}
	}
	for k, v := range observed.GetLabels() {
		if contract.IsBookkeepingLabel(k) {
			labels[k] = v
		}
	}
	meta["labels"] = labels
	if dp := annotation(observed.Object, contract.AnnotationDeletionPolicy); dp != "" {
		annotations, _ := meta["annotations"].(map[string]any)
		annotations = maps.Clone(annotations)
		if annotations == nil {
			annotations = map[string]any{}
		}
		annotations[contract.AnnotationDeletionPolicy] = dp
		meta["annotations"] = annotations
	}
	if ref := metav1.GetControllerOfNoCopy(observed); ref != nil && ref.UID == parent.GetUID() {
		meta["ownerReferences"] = []any{map[string]any{
			"apiVersion": ref.APIVersion, "kind": ref.Kind, "name": ref.Name, "uid": string(ref.UID),
			"controller": ref.Controller != nil && *ref.Controller, "blockOwnerDeletion": ref.BlockOwnerDeletion != nil && *ref.BlockOwnerDeletion,
		}}
	}
	return &unstructured.Unstructured{Object: obj}
}
