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
		{"observed may have items appended by admission", []any{"a"}, []any{"a", "token-volume"}, true},
		{"a missing item is a difference", []any{"a", "b"}, []any{"a"}, false},
		{"quantities compare by value", map[string]any{"cpu": "0.5", "memory": "1024Mi"}, map[string]any{"cpu": "500m", "memory": "1Gi"}, true},
		{"an integer quantity matches its string", map[string]any{"cpu": int64(1)}, map[string]any{"cpu": "1"}, true},
		{"zero values the server drops", map[string]any{"value": "", "hostNetwork": false, "n": int64(0)}, map[string]any{}, true},
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

func TestNeedsApplyNoticesAnItemMetacelRemoved(t *testing.T) {
	managed := map[string]any{"f:spec": map[string]any{"f:containers": map[string]any{
		`k:{"name":"app"}`:     map[string]any{"f:name": map[string]any{}, "f:command": map[string]any{}},
		`k:{"name":"sidecar"}`: map[string]any{"f:name": map[string]any{}},
	}}}
	observed := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "v1", "kind": "Pod",
		"metadata": map[string]any{"name": "p", "managedFields": []any{map[string]any{
			"manager": "metacel", "operation": "Apply", "apiVersion": "v1", "fieldsType": "FieldsV1", "fieldsV1": managed,
		}}},
		"spec": map[string]any{"containers": []any{
			map[string]any{"name": "app", "command": []any{"x"}},
			map[string]any{"name": "sidecar"},
		}},
	}}
	pod := func(containers ...any) *unstructured.Unstructured {
		return &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "Pod", "metadata": map[string]any{"name": "p"}, "spec": map[string]any{"containers": containers}}}
	}
	if NeedsApply(pod(map[string]any{"name": "app", "command": []any{"x"}}, map[string]any{"name": "sidecar"}), observed) {
		t.Error("nothing changed")
	}
	if !NeedsApply(pod(map[string]any{"name": "app", "command": []any{"x"}}), observed) {
		t.Error("the sidecar metacel set is no longer desired: apply")
	}
	if !NeedsApply(pod(map[string]any{"name": "app"}, map[string]any{"name": "sidecar"}), observed) {
		t.Error("the command metacel set is no longer desired: apply")
	}
}
