package controller

import (
	"slices"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"metacel.dev/metacel/runtime/render"
)

func TestRelatedIndex(t *testing.T) {
	cms := schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}
	secrets := schema.GroupVersionResource{Version: "v1", Resource: "secrets"}
	ix := newRelatedIndex()
	ix.set("ns/a", []render.RelatedRef{{ID: "src", Resource: cms, Namespace: "src", Name: "cfg"}})
	ix.set("ns/b", []render.RelatedRef{{ID: "src", Resource: cms, Namespace: "src", Name: "cfg"}})
	ix.set("ns/c", []render.RelatedRef{{ID: "all", Resource: cms, Namespace: "src", Selector: labels.SelectorFromSet(labels.Set{"team": "x"})}})

	obj := func(ns, name string, l map[string]string) *unstructured.Unstructured {
		u := &unstructured.Unstructured{}
		u.SetNamespace(ns)
		u.SetName(name)
		u.SetLabels(l)
		return u
	}
	tests := []struct {
		name string
		gvr  schema.GroupVersionResource
		obj  *unstructured.Unstructured
		want []string
	}{
		{"a named object re-syncs the parents that read it", cms, obj("src", "cfg", nil), []string{"ns/a", "ns/b"}},
		{"a selected object re-syncs the selecting parent", cms, obj("src", "other", map[string]string{"team": "x"}), []string{"ns/c"}},
		{"both at once", cms, obj("src", "cfg", map[string]string{"team": "x"}), []string{"ns/a", "ns/b", "ns/c"}},
		{"another namespace re-syncs none", cms, obj("elsewhere", "cfg", map[string]string{"team": "x"}), nil},
		{"another resource re-syncs none", secrets, obj("src", "cfg", nil), nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := ix.parentsReading(tc.gvr, tc.obj)
			slices.Sort(got)
			if !slices.Equal(got, tc.want) {
				t.Errorf("got %v, want %v", got, tc.want)
			}
		})
	}

	ix.set("ns/a", nil) // a no longer reads anything
	ix.forget("ns/c")   // c is gone
	if got := ix.parentsReading(cms, obj("src", "cfg", map[string]string{"team": "x"})); !slices.Equal(got, []string{"ns/b"}) {
		t.Errorf("after forgetting: got %v, want [ns/b]", got)
	}
	if len(ix.byName) != 1 || len(ix.selectors) != 0 || len(ix.byParent) != 1 {
		t.Errorf("the index keeps what was forgotten: %d names, %d selectors, %d parents", len(ix.byName), len(ix.selectors), len(ix.byParent))
	}
}
