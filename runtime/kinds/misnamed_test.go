package kinds

import (
	"testing"

	"k8s.io/apimachinery/pkg/runtime/schema"
)

func TestMisnamedSaysWhatTheKindIs(t *testing.T) {
	tests := []struct {
		name string
		gvk  schema.GroupVersionKind
		want string
	}{
		{"a known kind", schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"}, ""},
		{"the wrong case, whose guessed resource exists", schema.GroupVersionKind{Version: "v1", Kind: "Configmap"},
			`v1 configmaps holds objects of kind "ConfigMap", not "Configmap": write kind: ConfigMap`},
		{"a misspelt kind of a Kubernetes group", schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: "Deploymnet"},
			`the Kubernetes group "apps" has no kind "Deploymnet" (did you mean "Deployment"?)`},
		{"a kind of the group at a version it is not served in, which other checks judge", schema.GroupVersionKind{Group: "apps", Version: "v1beta1", Kind: "Deployment"}, ""},
		{"a custom resource whose CRD was not given", schema.GroupVersionKind{Group: "example.com", Version: "v1", Kind: "Lamp"}, ""},
	}
	c := NewCatalog()
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := Misnamed(c, tc.gvk); got != tc.want {
				t.Errorf("Misnamed(%v) = %q, want %q", tc.gvk, got, tc.want)
			}
		})
	}
}
