package policy

import (
	"strings"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"sigs.k8s.io/yaml"

	"metacel.dev/metacel/runtime/kinds"
)

// myappsWithStatus is a catalog where myapps has the given status schema (YAML), or none, and
// the status subresource.
func myappsWithStatus(t *testing.T, status string) kinds.Mapper {
	t.Helper()
	return myapps(t, status, true)
}

func myapps(t *testing.T, status string, subresource bool) kinds.Mapper {
	t.Helper()
	schema := &apiextensionsv1.JSONSchemaProps{Type: "object", Properties: map[string]apiextensionsv1.JSONSchemaProps{
		"spec": {Type: "object", XPreserveUnknownFields: ptr(true)},
	}}
	if status != "" {
		s := apiextensionsv1.JSONSchemaProps{}
		if err := yaml.UnmarshalStrict([]byte(status), &s); err != nil {
			t.Fatal(err)
		}
		schema.Properties["status"] = s
	}
	version := apiextensionsv1.CustomResourceDefinitionVersion{
		Name: "v1", Served: true, Storage: true,
		Schema: &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: schema},
	}
	if subresource {
		version.Subresources = &apiextensionsv1.CustomResourceSubresources{Status: &apiextensionsv1.CustomResourceSubresourceStatus{}}
	}
	m := kinds.NewCatalog()
	m.AddCRD(&apiextensionsv1.CustomResourceDefinition{Spec: apiextensionsv1.CustomResourceDefinitionSpec{
		Group: "demo.rtfm.co.ua", Scope: apiextensionsv1.NamespaceScoped,
		Names:    apiextensionsv1.CustomResourceDefinitionNames{Plural: "myapps", Kind: "MyApp"},
		Versions: []apiextensionsv1.CustomResourceDefinitionVersion{version},
	}})
	return m
}

func ptr[T any](v T) *T { return &v }

func TestStatusNeedsTheStatusSubresource(t *testing.T) {
	m := myapps(t, "type: object\nx-kubernetes-preserve-unknown-fields: true\n", false)
	const status = "  status:\n    phase: \"${'Running'}\"\n"
	if _, err := Load("p.yaml", []byte(header+status), m); err == nil || !strings.Contains(err.Error(), "p.yaml:12: spec.status: the CRD of myapps.demo.rtfm.co.ua has no status subresource") {
		t.Errorf("got %v", err)
	}
	builtIn := strings.Replace(strings.Replace(header, "demo.rtfm.co.ua/v1", "v1", 1), "myapps", "namespaces", 1)
	if _, err := Load("p.yaml", []byte(builtIn+status), kinds.NewCatalog()); err == nil || !strings.Contains(err.Error(), "namespaces is a built-in resource, whose status metacel never writes") {
		t.Errorf("got %v", err)
	}
}

func TestStatusSchemaChecks(t *testing.T) {
	const conditions = `conditions:
      type: array
      items:
        type: object
        properties:
          type: {type: string}
          status: {type: string}
          reason: {type: string}
          message: {type: string}
          lastTransitionTime: {type: string}
          observedGeneration: {type: integer}
`
	const policyStatus = "  status:\n    phase: \"${'Running'}\"\n"
	tests := []struct {
		name   string
		status string // the CRD's status schema
		want   string // "" when the policy loads
	}{
		{"status preserving unknown fields", "type: object\nx-kubernetes-preserve-unknown-fields: true\n", ""},
		{"every field declared", "type: object\nproperties:\n  phase: {type: string}\n  observedGeneration: {type: integer}\n  " + conditions, ""},
		{"no status in the schema", "",
			"p.yaml:6: spec.parentResource: the CRD of myapps.demo.rtfm.co.ua declares no status, where metacel writes [conditions observedGeneration]"},
		{"no conditions", "type: object\nproperties:\n  phase: {type: string}\n  observedGeneration: {type: integer}\n",
			"p.yaml:6: spec.parentResource: the CRD of myapps.demo.rtfm.co.ua declares no status.conditions, which metacel writes"},
		{"conditions without reason", "type: object\nproperties:\n  phase: {type: string}\n  observedGeneration: {type: integer}\n  " +
			strings.Replace(conditions, "          reason: {type: string}\n", "", 1),
			"declares no status.conditions[].reason, which metacel writes"},
		{"conditions that are not a list", "type: object\nproperties:\n  phase: {type: string}\n  observedGeneration: {type: integer}\n  conditions: {type: string}\n",
			`declares status.conditions as "string": metacel writes a list of conditions (type: array)`},
		{"a policy status field the schema lacks", "type: object\nproperties:\n  observedGeneration: {type: integer}\n  " + conditions,
			"p.yaml:13: spec.status.phase: the CRD of myapps.demo.rtfm.co.ua declares no status.phase"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Load("p.yaml", []byte(header+policyStatus), myappsWithStatus(t, tc.status))
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("want no error, got:\n%v", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Fatalf("got error:\n%v\nwant it to contain:\n%s", err, tc.want)
			}
		})
	}
}
