package render

import (
	"encoding/json"
	"maps"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/yaml"

	"metacel.dev/metacel/runtime/decide/noop"
	"metacel.dev/metacel/runtime/kinds"
	"metacel.dev/metacel/runtime/policy"
	"metacel.dev/metacel/test/testpolicies"
)

// storedCase is one case of testdata/stored.yaml.
type storedCase struct {
	Name     string               `json:"name"`
	Resource policy.ChildResource `json:"resource"`
	Child    map[string]any       `json:"child"`
	Stored   map[string]any       `json:"stored"`
	Stale    bool                 `json:"stale"`
}

func readStoredCases(t *testing.T) []storedCase {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "stored.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var cases []storedCase
	if err := yaml.UnmarshalStrict(b, &cases); err != nil {
		t.Fatal(err)
	}
	return cases
}

// renderOne renders a policy whose one child is the template child, of resource res.
func renderOne(t *testing.T, res policy.ChildResource, child map[string]any) *unstructured.Unstructured {
	t.Helper()
	template, err := json.Marshal(child)
	if err != nil {
		t.Fatal(err)
	}
	text := testpolicies.YAML("onechild", testpolicies.Fills{"APIVERSION": res.APIVersion, "RESOURCE": res.Resource, "TEMPLATE": string(template)})
	cs, err := policy.Load("p.yaml", []byte(text), kinds.NewCatalog())
	if err != nil {
		t.Fatal(err)
	}
	out, err := Render(t.Context(), cs[0], Input{Parent: obj(t, testParent), Mapper: kinds.NewCatalog()})
	if err != nil {
		t.Fatal(err)
	}
	return out.Children[0].Object
}

// TestWhatRenderGivesIsUpToDateOnceStored renders each case's child, stores it as the API server
// does (the case's stored fields, and the child's metadata, which the server keeps as sent), and
// finds it up to date: a converged child costs no write, and no Recreate.
func TestWhatRenderGivesIsUpToDateOnceStored(t *testing.T) {
	for _, tc := range readStoredCases(t) {
		t.Run(tc.Name, func(t *testing.T) {
			rendered := renderOne(t, tc.Resource, runtime.DeepCopyJSON(tc.Child))
			stored := withMetadataOf(tc.Stored, rendered)
			if noop.SchemaFor(rendered.GroupVersionKind(), nil).NeedsApply(rendered, stored) {
				t.Errorf("the rendered child is not up to date once stored:\nrendered %v\nstored   %v", rendered.Object, stored.Object)
			}
			if _, ok := rendered.Object["stringData"]; ok {
				t.Errorf("the rendered child keeps stringData, which the API server never returns: %v", rendered.Object)
			}
			asWritten := withMetadataOf(tc.Child, rendered)
			if stale := noop.SchemaFor(asWritten.GroupVersionKind(), nil).NeedsApply(asWritten, stored); stale != tc.Stale {
				t.Errorf("the child as written judged stale: %v, want %v", stale, tc.Stale)
			}
		})
	}
}

// withMetadataOf returns the object of fields, with the kind and metadata of obj.
func withMetadataOf(fields map[string]any, obj *unstructured.Unstructured) *unstructured.Unstructured {
	out := runtime.DeepCopyJSON(fields)
	maps.Copy(out, map[string]any{
		"apiVersion": obj.GetAPIVersion(), "kind": obj.GetKind(),
		"metadata": runtime.DeepCopyJSONValue(obj.Object["metadata"]),
	})
	return &unstructured.Unstructured{Object: out}
}

// TestStoredFormLeavesWhatTheServerWouldRefuse: a value of the wrong type is left as written, so
// that the schema check names it, and a kind of another group is no built-in kind.
func TestStoredFormLeavesWhatTheServerWouldRefuse(t *testing.T) {
	tests := []struct {
		name string
		obj  string
	}{
		{"a stringData value that is not a string", `{apiVersion: v1, kind: Secret, stringData: {a: 1}}`},
		{"data that is not an object", `{apiVersion: v1, kind: Secret, data: [a], stringData: {a: x}}`},
		{"a serviceAccountName that is not a string", `{apiVersion: v1, kind: Pod, spec: {serviceAccount: a, serviceAccountName: [b]}}`},
		{"base64 that does not decode", "{apiVersion: v1, kind: ConfigMap, binaryData: {a: \"not base64\\n\"}}"},
		{"a kind of another group", `{apiVersion: example.com/v1, kind: Secret, stringData: {a: x}}`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			o := obj(t, tc.obj)
			want := o.DeepCopy()
			storedForm(o.Object, o.GroupVersionKind().GroupKind())
			if !reflect.DeepEqual(o.Object, want.Object) {
				t.Errorf("rewrote %v into %v: the schema check is to refuse it", want.Object, o.Object)
			}
		})
	}
}
