package policy

import (
	"testing"

	"metacel.dev/metacel/runtime/manifest"
)

func TestWhichFilesHoldPolicies(t *testing.T) {
	tests := []struct {
		name, text string
		policy     bool
	}{
		{"a CompositePolicy is one", "apiVersion: metacel.dev/v1alpha1\nkind: CompositePolicy\n", true},
		{"a misspelt kind of metacel.dev is one, for its error to show", "apiVersion: metacel.dev/v1alpha1\nkind: CompositePolicyy\n", true},
		{"a CompositePolicy of another apiVersion is one, for its error to show", "apiVersion: metacel.dev/v1\nkind: CompositePolicy\n", true},
		{"a ConfigMap holding one is one", "apiVersion: v1\nkind: ConfigMap\ndata:\n  p.yaml: |\n    kind: CompositePolicy\n", true},
		{"a ConfigMap holding one that does not parse is one, for its error to show",
			"apiVersion: v1\nkind: ConfigMap\ndata:\n  p.yaml: |\n    apiVersion: metacel.dev/v1alpha1\n    kind: CompositePolicy\n    spec: [a\n", true},
		{"a ConfigMap holding a misspelt kind of metacel.dev is one", "apiVersion: v1\nkind: ConfigMap\ndata:\n  p.yaml: 'apiVersion: metacel.dev/v1alpha1'\n", true},
		{"a ConfigMap labelled as policies is one, whatever its data", "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  labels: {metacel.dev/policy: \"true\"}\ndata: {p.yaml: 'a: [b'}\n", true},
		{"a policy's child labelled with the legacy policy label is not", "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  labels: {metacel.dev/policy: \"true\", app.kubernetes.io/managed-by: metacel}\ndata: {a: b}\n", false},
		{"a policy among other documents is one", "kind: Namespace\n---\nkind: CompositePolicy\n", true},
		{"a ConfigMap of other data is not", "apiVersion: v1\nkind: ConfigMap\ndata: {a: b, c: 'kind: Pod'}\n", false},
		{"a CRD is not", "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\n", false},
		{"a test file is not", "policy: p.yaml\ntests: []\n", false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			heads, err := manifest.Heads([]byte(tc.text))
			if err != nil {
				t.Fatal(err)
			}
			if got := Holds(heads); got != tc.policy {
				t.Errorf("Holds = %v, want %v", got, tc.policy)
			}
		})
	}
}
