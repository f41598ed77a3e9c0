package apply

import (
	"bytes"
	"reflect"
	"slices"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"
	"sigs.k8s.io/structured-merge-diff/v6/typed"
	"sigs.k8s.io/structured-merge-diff/v6/value"
)

// OwnedStatus returns the part of obj's status that metacel's last status apply set and still
// owns (its managed fields on the status subresource), with the values obj holds now; nil when
// metacel owns none. Another writer's status fields are not in it: metacel compares and re-applies
// only its own, never takes over theirs. The managed fields are read with structured-merge-diff,
// over a schema deduced from the object (maps field by field, lists whole).
func OwnedStatus(obj *unstructured.Unstructured) map[string]any {
	var entry *metav1.ManagedFieldsEntry
	for _, mf := range obj.GetManagedFields() {
		if mf.Manager == FieldManager && mf.Operation == metav1.ManagedFieldsOperationApply && mf.Subresource == "status" && mf.FieldsV1 != nil {
			entry = &mf
			break
		}
	}
	if entry == nil {
		return nil
	}
	set := &fieldpath.Set{}
	if err := set.FromJSON(bytes.NewReader(entry.FieldsV1.GetRawBytes())); err != nil {
		return nil
	}
	tv, err := typed.DeducedParseableType.FromUnstructured(obj.Object)
	if err != nil {
		return nil
	}
	owned, _ := keepKeyedItems(tv.ExtractItems(set.Leaves()).AsValue().Unstructured(), set).(map[string]any)
	status, _ := owned["status"].(map[string]any)
	return status
}

// keepKeyedItems narrows, in a value extracted over a deduced schema (lists whole), the lists
// that the set names item by item (k:{...}, as the server records a list of type map such as
// conditions) to the items the set names: another writer's condition is not metacel's.
func keepKeyedItems(v any, set *fieldpath.Set) any {
	switch v := v.(type) {
	case map[string]any:
		for k, sub := range v {
			if child, ok := set.Children.Get(fieldpath.PathElement{FieldName: &k}); ok {
				v[k] = keepKeyedItems(sub, child)
			}
		}
		return v
	case []any:
		var keys []*value.FieldList
		collect := func(pe fieldpath.PathElement) {
			if pe.Key != nil {
				keys = append(keys, pe.Key)
			}
		}
		set.Members.Iterate(collect)
		set.Children.Iterate(collect)
		if len(keys) == 0 {
			return v // owned whole
		}
		out := make([]any, 0, len(keys))
		for _, item := range v {
			if m, ok := item.(map[string]any); ok && slices.ContainsFunc(keys, func(k *value.FieldList) bool { return keyMatches(m, k) }) {
				out = append(out, item)
			}
		}
		return out
	}
	return v
}

// keyMatches reports whether a list item has the key's field values.
func keyMatches(item map[string]any, key *value.FieldList) bool {
	for _, f := range *key {
		if !reflect.DeepEqual(item[f.Name], f.Value.Unstructured()) {
			return false
		}
	}
	return true
}
