package noop

import (
	"testing"

	"k8s.io/apimachinery/pkg/runtime/schema"
)

func TestSatisfied(t *testing.T) {
	quantities := &node{elem: quantityNode} // resources.limits
	named := func(names ...string) []any {
		out := make([]any, len(names))
		for i, n := range names {
			out[i] = map[string]any{"name": n}
		}
		return out
	}
	tests := []struct {
		name              string
		desired, observed any
		schema            *node
		want              bool
	}{
		{"extra observed fields do not matter", map[string]any{"a": "x"}, map[string]any{"a": "x", "b": "defaulted"}, nil, true},
		{"a changed field does", map[string]any{"a": "x"}, map[string]any{"a": "y"}, nil, false},
		{"a missing field does", map[string]any{"a": "x"}, map[string]any{}, nil, false},
		{"an empty desired list matches a missing one", map[string]any{"env": []any{}}, map[string]any{}, nil, true},
		{"list items compare as subsets", []any{map[string]any{"port": int64(80)}}, []any{map[string]any{"port": int64(80), "protocol": "TCP"}}, nil, true},
		{"observed may have items appended by admission", []any{"a"}, []any{"a", "token-volume"}, nil, true},
		{"a missing item is a difference", []any{"a", "b"}, []any{"a"}, nil, false},
		{"quantities compare by value", map[string]any{"cpu": "0.5", "memory": "1024Mi"}, map[string]any{"cpu": "500m", "memory": "1Gi"}, quantities, true},
		{"an integer quantity matches its string", map[string]any{"cpu": int64(1)}, map[string]any{"cpu": "1"}, quantities, true},
		{"a string that is no quantity compares as a string", map[string]any{"version": "1.10"}, map[string]any{"version": "1.1"}, nil, false},
		{"a string compares as a string even where a number would be a quantity", "010", "10", nil, false},
		{"zero values the server drops", map[string]any{"value": "", "hostNetwork": false, "n": int64(0)}, map[string]any{}, nil, true},
		{"a null the server stores nothing of, whatever it holds (creationTimestamp: null, as kubectl prints it)",
			map[string]any{"creationTimestamp": nil, "name": "x"}, map[string]any{"creationTimestamp": "2026-11-30T00:00:00Z", "name": "x"}, nil, true},
		{"numbers compare by value", int64(3), float64(3), nil, true},
		{"integers compare exactly, beyond a float's precision", int64(1<<53 + 1), int64(1 << 53), nil, false},
		{"types differ", "3", int64(3), nil, false},
		{"a number is no string, without a quantity", int64(1), "1", nil, false},
		{"nested change", map[string]any{"spec": map[string]any{"replicas": int64(3)}}, map[string]any{"spec": map[string]any{"replicas": int64(2)}}, nil, false},
		{"without a schema or managed fields, an item put first before named items is no change", named("a", "b"), named("token", "a", "b"), nil, true},
		{"without a schema or managed fields, named items in another order are a change", named("b", "a"), named("a", "b"), nil, false},
		{"without a schema or managed fields, a named item missing is a change", named("a", "b"), named("token", "a"), nil, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := satisfied(tc.desired, tc.observed, tc.schema, unknown); got != tc.want {
				t.Errorf("satisfied = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestKeyPathSpellsManagedFieldsAsTheAPIServer(t *testing.T) {
	pod := SchemaFor(schema.GroupVersionKind{Version: "v1", Kind: "Pod"}, nil).root
	containers := pod.field("spec").field("containers")
	ports := containers.elem.field("ports")
	tests := []struct {
		name string
		item map[string]any
		list *node
		want string
	}{
		{"a single key", map[string]any{"name": "app", "image": "x"}, containers, `k:{"name":"app"}`},
		{"keys sorted, a default filled in", map[string]any{"containerPort": int64(8080)}, ports, `k:{"containerPort":8080,"protocol":"TCP"}`},
		{"an integral float as an integer", map[string]any{"containerPort": float64(80), "protocol": "UDP"}, ports, `k:{"containerPort":80,"protocol":"UDP"}`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := keyPath(tc.item, tc.list.keys, tc.list.keyDefaults)
			if !ok || got != tc.want {
				t.Errorf("keyPath = %q, %v; want %q", got, ok, tc.want)
			}
		})
	}
	if _, ok := keyPath(map[string]any{"name": "a<b"}, containers.keys, containers.keyDefaults); ok {
		t.Error("a string an encoder may escape is not spelt: its entry is found by parsing")
	}
}
