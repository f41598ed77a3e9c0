package builtinschema

import (
	"bytes"
	"encoding/gob"
	"os"
	"testing"

	yaml "go.yaml.in/yaml/v2"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/managedfields"
	"k8s.io/client-go/applyconfigurations"
	"k8s.io/client-go/kubernetes/scheme"
	smdschema "sigs.k8s.io/structured-merge-diff/v6/schema"
)

// update writes schema.gob again: METACEL_UPDATE_GOLDEN=1 go test ./runtime/builtinschema
var update = os.Getenv("METACEL_UPDATE_GOLDEN") != ""

func TestTheStoredSchemaIsClientGos(t *testing.T) {
	want := clientGos()
	if update {
		b, err := encode(want.Schema.Types)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile("schema.gob", b, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	got, err := decode(stored)
	if err != nil {
		t.Fatalf("schema.gob does not decode (%v): write it again with METACEL_UPDATE_GOLDEN=1 go test ./runtime/builtinschema", err)
	}
	if len(got) != len(want.Schema.Types) {
		t.Fatalf("schema.gob has %d types, client-go's schema %d: write it again with METACEL_UPDATE_GOLDEN=1 go test ./runtime/builtinschema", len(got), len(want.Schema.Types))
	}
	// compared as YAML, the form client-go ships it in (TypeRef.Equals compares the addresses
	// of element relationships)
	for i := range got {
		if g, w := asYAML(t, got[i]), asYAML(t, want.Schema.Types[i]); g != w {
			t.Fatalf("schema.gob is not the schema of the client-go in go.mod: type %q is\n%s\nin client-go\n%s\nwrite it again with METACEL_UPDATE_GOLDEN=1 go test ./runtime/builtinschema (make golden)", want.Schema.Types[i].Name, g, w)
		}
	}
}

// encode writes types as gob, as decode reads them: the generator of schema.gob.
func encode(types []smdschema.TypeDef) ([]byte, error) {
	var b bytes.Buffer
	err := gob.NewEncoder(&b).Encode(types)
	return b.Bytes(), err
}

func asYAML(t *testing.T, td smdschema.TypeDef) string {
	t.Helper()
	b, err := yaml.Marshal(td)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestTypeConverterTypesBuiltinObjects(t *testing.T) {
	for _, tc := range []struct {
		name  string
		gvk   schema.GroupVersionKind
		typed string // the OpenAPI name of its type; "" for an error
	}{
		{"a core kind", schema.GroupVersionKind{Version: "v1", Kind: "Pod"}, "io.k8s.api.core.v1.Pod"},
		{"a kind of a group", schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: "Deployment"}, "io.k8s.api.apps.v1.Deployment"},
		{"a kind client-go does not know", schema.GroupVersionKind{Group: "demo.rtfm.co.ua", Version: "v1", Kind: "MyApp"}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			obj := &unstructured.Unstructured{Object: map[string]any{}}
			obj.SetGroupVersionKind(tc.gvk)
			tv, err := TypeConverter().ObjectToTyped(obj)
			if tc.typed == "" {
				if err == nil {
					t.Fatalf("typed %v, want an error", tc.gvk)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if tv.Schema() != &Parser().Schema {
				t.Error("typed against another schema than Parser's")
			}
			if name := tv.TypeRef().NamedType; name == nil || *name != tc.typed {
				t.Errorf("typed as %v, want %q", name, tc.typed)
			}
		})
	}
}

func TestAStoredPodValidatesAsClientGosDoes(t *testing.T) {
	pod := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "v1", "kind": "Pod", "metadata": map[string]any{"name": "p"},
		"spec": map[string]any{"containers": []any{map[string]any{"name": "c", "image": "nginx", "bogus": true}}},
	}}
	_, err := TypeConverter().ObjectToTyped(pod)
	if err == nil {
		t.Fatal("a container field the schema does not declare was accepted")
	}
	_, want := clientGosConverter().ObjectToTyped(pod)
	if want == nil || err.Error() != want.Error() {
		t.Errorf("error %q, client-go's %v", err, want)
	}
}

func clientGosConverter() managedfields.TypeConverter {
	return applyconfigurations.NewTypeConverter(scheme.Scheme)
}
