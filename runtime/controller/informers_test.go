package controller

import (
	"maps"
	"slices"
	"testing"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	"k8s.io/client-go/tools/cache"
)

func TestPoolSharesReleasesAndRetires(t *testing.T) {
	widgets := schema.GroupVersionResource{Group: "example.com", Version: "v1", Resource: "widgets"}
	cms := schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}
	client := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), map[schema.GroupVersionResource]string{
		widgets: "WidgetList", cms: "ConfigMapList",
	})
	pool := NewPool(t.Context(), client, nil)
	expectLen := func(what string, want int) {
		t.Helper()
		if got := pool.Len(); got != want {
			t.Fatalf("%s: %d informers, want %d", what, got, want)
		}
	}

	a, releaseA := pool.Acquire(widgets, "")
	b, releaseB := pool.Acquire(widgets, "")
	_, releaseCM := pool.Acquire(cms, "")
	if a != b {
		t.Fatal("two users of one resource and selector must share one informer")
	}
	expectLen("after three acquires of two keys", 2)

	pool.Retire(func(gvr schema.GroupVersionResource) bool { return gvr.Group == "example.com" })
	c, releaseC := pool.Acquire(widgets, "")
	if c == a {
		t.Fatal("an Acquire after Retire must start a new informer")
	}
	expectLen("retired informer still used, beside its successor", 3)

	releaseA()
	releaseA() // a second call changes nothing
	expectLen("retired informer with one user left", 3)
	releaseB()
	expectLen("retired informer released by its last user", 2)
	releaseC()
	releaseCM()
	expectLen("everything released", 0)
}

// A pooled informer keeps only the indexes its users look objects up by; a user that asks for
// another adds it, and the objects cached already are indexed at once.
func TestAPooledInformerKeepsTheIndexesItsUsersAskFor(t *testing.T) {
	cms := schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}
	client := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), map[schema.GroupVersionResource]string{cms: "ConfigMapList"})
	pool := NewPool(t.Context(), client, nil)
	indexesOf := func(inf cache.SharedIndexInformer) []string {
		return slices.Sorted(maps.Keys(inf.GetIndexer().GetIndexers()))
	}

	plain, releasePlain := pool.Acquire(cms, managedSelector)
	defer releasePlain()
	if got := indexesOf(plain); len(got) != 0 {
		t.Fatalf("an informer no one looks up by index keeps %v", got)
	}
	child := objectFrom(t, `{apiVersion: v1, kind: ConfigMap, metadata: {name: c, namespace: ns, uid: uid-c, labels: {metacel.dev/parent-uid: uid-p}}}`)
	// the pool runs the informer: its first list (empty) would replace an object added before it
	if !cache.WaitForCacheSync(t.Context().Done(), plain.HasSynced) {
		t.Fatal("the informer did not sync")
	}
	if err := plain.GetIndexer().Add(child); err != nil {
		t.Fatal(err)
	}

	children, releaseChildren := pool.Acquire(cms, managedSelector, byParentUID)
	defer releaseChildren()
	if children != plain {
		t.Fatal("a user asking for an index must share the informer")
	}
	if got := indexesOf(children); !slices.Equal(got, []string{byParentUID}) {
		t.Errorf("indexes %v, want [%s]", got, byParentUID)
	}
	if objs, err := children.GetIndexer().ByIndex(byParentUID, "uid-p"); err != nil || len(objs) != 1 {
		t.Errorf("the object cached before the index was added: %d found (%v)", len(objs), err)
	}
	_, releaseAgain := pool.Acquire(cms, managedSelector, byParentUID, byUID)
	defer releaseAgain()
	if got := indexesOf(children); !slices.Equal(got, []string{byParentUID, byUID}) {
		t.Errorf("indexes %v, want [%s %s]", got, byParentUID, byUID)
	}
}

// A controller's informers carry the indexes its lookups read: a parent by its UID (a child's
// event routed to it), children by their parent's UID, related objects chosen by a selector by
// namespace. A lookup by an index its informer lacks finds nothing, silently.
func TestAControllersInformersCarryTheIndexesItReads(t *testing.T) {
	h := newHarness(t, copyToSecret()+`  related:
    - {id: peers, apiVersion: v1, resource: secrets, selector: {matchLabels: {peer: "yes"}}}
`)
	h.c.deps.Pool = NewPool(t.Context(), h.client, nil)
	h.c.children = map[string]*resourceCache{}
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
		"parents":         {h.c.parents.whole(), []string{byUID}},
		"children":        {h.c.children[secrets.String()].whole(), []string{byParentUID}},
		"related objects": {h.c.related[secrets.String()], []string{cache.NamespaceIndex}},
	} {
		if got := indexesOf(tc.inf); !slices.Equal(got, tc.want) {
			t.Errorf("%s: indexes %v, want %v", name, got, tc.want)
		}
	}
}
