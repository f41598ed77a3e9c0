package preview

import (
	"regexp"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

func TestStableUID(t *testing.T) {
	mk := func(kind, ns, name string) *unstructured.Unstructured {
		u := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "example.com/v1", "kind": kind}}
		u.SetNamespace(ns)
		u.SetName(name)
		return u
	}
	uuidV8 := regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-8[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`)
	a := stableUID(mk("Gadget", "default", "gizmo"))
	if !uuidV8.MatchString(string(a)) {
		t.Errorf("%s is not a version 8 UUID", a)
	}
	if b := stableUID(mk("Gadget", "default", "gizmo")); b != a {
		t.Errorf("two UIDs of one parent differ: %s, %s", a, b)
	}
	for _, other := range []*unstructured.Unstructured{mk("Gadget", "default", "other"), mk("Gadget", "team", "gizmo"), mk("Widget", "default", "gizmo")} {
		if stableUID(other) == a {
			t.Errorf("%s %s/%s has the UID of another parent", other.GetKind(), other.GetNamespace(), other.GetName())
		}
	}
}
