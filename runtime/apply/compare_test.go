package apply

import (
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

func TestSatisfied(t *testing.T) {
	tests := []struct {
		name              string
		desired, observed any
		want              bool
	}{
		{"extra observed fields do not matter", map[string]any{"a": "x"}, map[string]any{"a": "x", "b": "defaulted"}, true},
		{"a changed field does", map[string]any{"a": "x"}, map[string]any{"a": "y"}, false},
		{"a missing field does", map[string]any{"a": "x"}, map[string]any{}, false},
		{"an empty desired list matches a missing one", map[string]any{"env": []any{}}, map[string]any{}, true},
		{"list items compare as subsets", []any{map[string]any{"port": int64(80)}}, []any{map[string]any{"port": int64(80), "protocol": "TCP"}}, true},
		{"list lengths must agree", []any{"a"}, []any{"a", "b"}, false},
		{"numbers compare by value", int64(3), float64(3), true},
		{"types differ", "3", int64(3), false},
		{"nested change", map[string]any{"spec": map[string]any{"replicas": int64(3)}}, map[string]any{"spec": map[string]any{"replicas": int64(2)}}, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := satisfied(tc.desired, tc.observed, nil); got != tc.want {
				t.Errorf("Satisfied = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestNeedsApplyRemovesWhatMetacelNoLongerSets(t *testing.T) {
	observed := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "v1", "kind": "ConfigMap",
		"metadata": map[string]any{"name": "x", "managedFields": []any{map[string]any{
			"manager": "metacel", "operation": "Apply", "apiVersion": "v1", "fieldsType": "FieldsV1",
			"fieldsV1": map[string]any{"f:data": map[string]any{"f:a": map[string]any{}, "f:b": map[string]any{}}},
		}}},
		"data": map[string]any{"a": "1", "b": "2", "c": "set by someone else"},
	}}
	same := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": "x"}, "data": map[string]any{"a": "1", "b": "2"}}}
	if NeedsApply(same, observed) {
		t.Error("nothing changed: no apply needed (c belongs to another manager)")
	}
	dropped := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": "x"}, "data": map[string]any{"a": "1"}}}
	if !NeedsApply(dropped, observed) {
		t.Error("b was set by metacel and is no longer desired: an apply must remove it")
	}
}
