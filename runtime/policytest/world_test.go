package policytest

import (
	"reflect"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"metacel.dev/metacel/runtime/kinds"
)

func obj(kind, ns, name string, extra map[string]any) *unstructured.Unstructured {
	o := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": kind, "metadata": map[string]any{"name": name}}}
	if ns != "" {
		o.SetNamespace(ns)
	}
	for k, v := range extra {
		o.Object[k] = v
	}
	return o
}

func TestUpsertMergesIntoTheSameObjectOrAdds(t *testing.T) {
	m := kinds.NewCatalog()
	start := func() []*unstructured.Unstructured {
		return []*unstructured.Unstructured{obj("Pod", "a", "p", map[string]any{"status": map[string]any{"phase": "Pending", "podIP": "10.0.0.1"}})}
	}
	tests := []struct {
		name string
		edit *unstructured.Unstructured
		want []*unstructured.Unstructured
	}{
		{"an edit without namespace merges into the object of its kind and name",
			obj("Pod", "", "p", map[string]any{"status": map[string]any{"phase": "Running"}}),
			[]*unstructured.Unstructured{obj("Pod", "a", "p", map[string]any{"status": map[string]any{"phase": "Running", "podIP": "10.0.0.1"}})}},
		{"null removes a field",
			obj("Pod", "a", "p", map[string]any{"status": map[string]any{"podIP": nil}}),
			[]*unstructured.Unstructured{obj("Pod", "a", "p", map[string]any{"status": map[string]any{"phase": "Pending"}})}},
		{"an edit of another name is added, in the parent's namespace",
			obj("Pod", "", "q", nil),
			[]*unstructured.Unstructured{start()[0], obj("Pod", "parent-ns", "q", nil)}},
		{"an edit in another namespace is added there",
			obj("Pod", "b", "p", nil),
			[]*unstructured.Unstructured{start()[0], obj("Pod", "b", "p", nil)}},
		{"a cluster-scoped kind gets no namespace",
			obj("Namespace", "", "n", nil),
			[]*unstructured.Unstructured{start()[0], obj("Namespace", "", "n", nil)}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := upsert(start(), Objects{Items: []*unstructured.Unstructured{tc.edit}, Where: []string{"here"}}, "parent-ns", m)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("got %v, want %v", got, tc.want)
			}
		})
	}
}

func TestParentPatchBumpsTheGenerationOnSpecChanges(t *testing.T) {
	tests := []struct {
		name  string
		patch map[string]any
		want  int64
	}{
		{"a spec change", map[string]any{"spec": map[string]any{"size": int64(5)}}, 2},
		{"a label change", map[string]any{"metadata": map[string]any{"labels": map[string]any{"a": "b"}}}, 1},
		{"a status change", map[string]any{"status": map[string]any{"x": "y"}}, 1},
		{"no change", map[string]any{"spec": map[string]any{"size": int64(3)}}, 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			w := &world{parent: obj("Thing", "a", "t", map[string]any{"spec": map[string]any{"size": int64(3)}})}
			w.parent.SetGeneration(1)
			if err := w.edit(&env{mapper: kinds.NewCatalog()}, &Step{ParentPatch: tc.patch}); err != nil {
				t.Fatal(err)
			}
			if g := w.parent.GetGeneration(); g != tc.want {
				t.Errorf("generation %d, want %d", g, tc.want)
			}
		})
	}
}
