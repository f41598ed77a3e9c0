package controller

import (
	"maps"
	"slices"
	"testing"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/tools/cache"

	"metacel.dev/metacel/runtime/informers"
)

// A controller's informers carry the indexes its lookups read: a parent by its UID (a child's
// event routed to it), children by their parent's UID, related objects chosen by a selector by
// namespace. A lookup by an index its informer lacks finds nothing, silently.
func TestAControllersInformersCarryTheIndexesItReads(t *testing.T) {
	h := newHarness(t, copyToSecret()+`  related:
    - {id: peers, apiVersion: v1, resource: secrets, selector: {matchLabels: {peer: "yes"}}}
`)
	h.c.deps.Pool = informers.NewPool(t.Context(), h.client, nil)
	h.c.caches.children = map[string]*childCache{}
	if err := h.c.Watch(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(h.c.release)
	indexesOf := func(inf cache.SharedIndexInformer) []string {
		return slices.Sorted(maps.Keys(inf.GetIndexer().GetIndexers()))
	}
	secrets := schema.GroupVersionResource{Version: "v1", Resource: "secrets"}
	for name, tc := range map[string]struct {
		inf  cache.SharedIndexInformer
		want []string
	}{
		"parents":         {h.c.caches.parents.Whole(), []string{informers.ByUID}},
		"children":        {h.c.caches.children[secrets.String()].Whole(), []string{informers.ByParentUID}},
		"related objects": {h.c.related.informers[secrets.String()], []string{cache.NamespaceIndex}},
	} {
		if got := indexesOf(tc.inf); !slices.Equal(got, tc.want) {
			t.Errorf("%s: indexes %v, want %v", name, got, tc.want)
		}
	}
}
