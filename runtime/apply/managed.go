package apply

import (
	"encoding/json"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// AppliedBy reports whether metacel has applied or created obj (it has metacel's entry in its
// managed fields): a copy of a child that only carries metacel's labels is not metacel's to delete.
func AppliedBy(obj *unstructured.Unstructured) bool {
	_, applied := managedByOp(obj, FieldManager, metav1.ManagedFieldsOperationApply)
	_, created := managedByOp(obj, FieldManager, metav1.ManagedFieldsOperationUpdate)
	return applied || created
}

// ManagedBy returns the fields a manager applied to obj, as the fieldsV1 tree ("f:spec": {...}):
// nil for an object it created (POST) and has not applied since, whose Update entry also holds
// the fields the API server defaulted. It reads them in place when obj holds them as decoded
// JSON (as informers and clients give objects), without a copy: the tree must not be changed.
// The no-op check (package decide/noop) reads metacel's with it, to type the lists the schema
// does not.
func ManagedBy(obj *unstructured.Unstructured, manager string) map[string]any {
	tree, _ := managedByOp(obj, manager, metav1.ManagedFieldsOperationApply)
	return tree
}

// UpdatedBy returns the fields a manager wrote on obj otherwise than by applying it: its create
// (POST), which also holds the fields the API server defaulted, and its patches; nil when it has
// no such entry. Read in place, as ManagedBy.
func UpdatedBy(obj *unstructured.Unstructured, manager string) map[string]any {
	tree, _ := managedByOp(obj, manager, metav1.ManagedFieldsOperationUpdate)
	return tree
}

// managedByOp returns the fields a manager set on obj by one operation, and whether it has an
// entry for it.
func managedByOp(obj *unstructured.Unstructured, manager string, op metav1.ManagedFieldsOperationType) (map[string]any, bool) {
	meta, _ := obj.Object["metadata"].(map[string]any)
	entries, ok := meta["managedFields"].([]any)
	if !ok {
		return decodeManagedBy(obj, manager, op)
	}
	for _, e := range entries {
		mf, _ := e.(map[string]any)
		if mf["manager"] != manager || mf["operation"] != string(op) {
			continue
		}
		if sub, _ := mf["subresource"].(string); sub != "" {
			continue
		}
		switch tree := mf["fieldsV1"].(type) {
		case nil:
		case map[string]any:
			return tree, true
		default:
			return decodeManagedBy(obj, manager, op)
		}
	}
	return nil, false
}

// decodeManagedBy is managedByOp for an object whose managed fields are not plain JSON values.
func decodeManagedBy(obj *unstructured.Unstructured, manager string, op metav1.ManagedFieldsOperationType) (map[string]any, bool) {
	for _, mf := range obj.GetManagedFields() {
		if mf.Manager == manager && mf.Operation == op && mf.Subresource == "" && mf.FieldsV1 != nil {
			var tree map[string]any
			if json.Unmarshal(mf.FieldsV1.GetRawBytes(), &tree) == nil {
				return tree, true
			}
		}
	}
	return nil, false
}

// CreatedNotApplied reports whether metacel created obj (POST) and has not applied it since: its
// fields are in an Update entry, which a server-side apply would not take over, so that a field
// the policy stops setting would never be removed. UpgradeToApply moves them first.
func CreatedNotApplied(obj *unstructured.Unstructured) bool {
	_, applied := managedByOp(obj, FieldManager, metav1.ManagedFieldsOperationApply)
	_, created := managedByOp(obj, FieldManager, metav1.ManagedFieldsOperationUpdate)
	return created && !applied
}
