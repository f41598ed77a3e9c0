package kinds

import (
	"path/filepath"
	"testing"

	"k8s.io/apimachinery/pkg/runtime/schema"
)

func TestCatalog(t *testing.T) {
	c, err := LoadCRDFiles([]string{filepath.Join("..", "..", "crds", "memcached.yaml")})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name       string
		gvk        schema.GroupVersionKind
		resource   string
		namespaced bool
		guessed    bool
	}{
		{"a built-in namespaced kind", schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: "Deployment"}, "deployments", true, false},
		{"a built-in cluster-scoped kind", schema.GroupVersionKind{Version: "v1", Kind: "Namespace"}, "namespaces", false, false},
		{"a kind from a CRD file", schema.GroupVersionKind{Group: "cache.example.com", Version: "v1alpha1", Kind: "Memcached"}, "memcacheds", true, false},
		{"an unknown kind is guessed", schema.GroupVersionKind{Group: "x.io", Version: "v1", Kind: "Policy"}, "policies", true, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			i := LookupKind(c, tc.gvk)
			if i.GVR.Resource != tc.resource || i.Namespaced != tc.namespaced || i.Guessed != tc.guessed {
				t.Errorf("got %+v", i)
			}
		})
	}
	mc, ok := c.ForResource(schema.GroupVersionResource{Group: "cache.example.com", Version: "v1alpha1", Resource: "memcacheds"})
	if !ok || mc.Schema == nil || !mc.HasStatus || mc.Kind != "Memcached" {
		t.Errorf("memcacheds: %+v", mc)
	}
}
