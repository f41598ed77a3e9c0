package preview

import (
	"errors"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"metacel.dev/metacel/runtime/kinds"
	"metacel.dev/metacel/runtime/policy"
)

// rulesPolicy declares its parent's CRD with CEL rules: on the whole parent, on a field, a format
// and an immutable field.
const rulesPolicy = `apiVersion: metacel.dev/v1alpha1
kind: CompositePolicy
metadata: {name: website}
spec:
  parentResource: {apiVersion: example.com/v1, resource: websites}
  parentSchema:
    kind: Website
    x-kubernetes-validations:
      - {rule: "self.spec.min <= self.spec.max", message: min must not exceed max}
    spec:
      min: {type: integer, default: 1}
      max: {type: integer, default: 3}
      region: {type: string, immutable: true}
      contact: {type: string, format: email}
      hosts: {type: array, items: {type: string, x-kubernetes-validations: [{rule: "self.endsWith('.example.com')", message: must be under example.com}]}}
  childResources: [{apiVersion: v1, resource: configmaps}]
  children:
    - id: site
      template:
        apiVersion: v1
        kind: ConfigMap
        metadata: {name: "${parent.metadata.name}"}
        data: {max: "${string(parent.spec.max)}"}
`

// TestTheRulesOfADeclaredParentAreCheckedOffline admits parents against the CRD a parentSchema
// declares, as the API server admits a create: its rules run, but a transition rule (oldSelf)
// has no old object to compare with and is skipped.
func TestTheRulesOfADeclaredParentAreCheckedOffline(t *testing.T) {
	tests := []struct {
		name, spec string
		want       string // the error, "" for none
	}{
		{"a parent within every rule", "{min: 1, max: 2, region: eu, contact: ops@example.com, hosts: [a.example.com]}", ""},
		{"an immutable field is set on create", "{region: eu}", ""},
		{"a rule of the whole parent", "{min: 3, max: 2}",
			"Website default/shop is invalid, the API server would refuse it: Invalid value: min must not exceed max"},
		{"a rule of a list's items", "{hosts: [a.example.org]}", `spec.hosts[0]: Invalid value: "a.example.org": must be under example.com`},
		{"a rule against a default", "{min: 5}", "Invalid value: min must not exceed max"},
		{"a format", "{contact: ops}", `spec.contact: Invalid value: "ops": spec.contact in body must be of type email`},
	}
	cat := kinds.NewCatalog()
	cs, err := policy.Load("p.yaml", []byte(rulesPolicy), cat)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			parent := &unstructured.Unstructured{}
			if err := yaml.Unmarshal([]byte("{apiVersion: example.com/v1, kind: Website, metadata: {name: shop}, spec: "+tc.spec+"}"), &parent.Object); err != nil {
				t.Fatal(err)
			}
			_, err := Run(t.Context(), Input{Policy: cs[0], Parent: parent, Mapper: cat})
			var invalid *InvalidError
			switch {
			case tc.want == "" && err != nil:
				t.Errorf("preview: %v, want none", err)
			case tc.want != "" && (!errors.As(err, &invalid) || !strings.Contains(err.Error(), tc.want)):
				t.Errorf("preview: %v, want the API server's refusal %q", err, tc.want)
			}
		})
	}
}
