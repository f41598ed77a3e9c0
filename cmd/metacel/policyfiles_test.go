package main

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
			if got := holdsPolicy(heads, true); got != tc.policy {
				t.Errorf("holdsPolicy = %v, want %v", got, tc.policy)
			}
		})
	}
}
