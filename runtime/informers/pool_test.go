package informers

import (
	"maps"
	"slices"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	"k8s.io/client-go/tools/cache"
	"sigs.k8s.io/yaml"

	"metacel.dev/metacel/runtime/compact"
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

	plain, releasePlain := pool.Acquire(cms, ManagedSelector)
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

	children, releaseChildren := pool.Acquire(cms, ManagedSelector, ByParentUID)
	defer releaseChildren()
	if children != plain {
		t.Fatal("a user asking for an index must share the informer")
	}
	if got := indexesOf(children); !slices.Equal(got, []string{ByParentUID}) {
		t.Errorf("indexes %v, want [%s]", got, ByParentUID)
	}
	if objs, err := Fixed(cms, children).ByIndex(ByParentUID, "uid-p"); err != nil || len(objs) != 1 {
		t.Errorf("the object cached before the index was added: %d found (%v)", len(objs), err)
	}
	_, releaseAgain := pool.Acquire(cms, ManagedSelector, ByParentUID, ByUID)
	defer releaseAgain()
	if got := indexesOf(children); !slices.Equal(got, []string{ByParentUID, ByUID}) {
		t.Errorf("indexes %v, want [%s %s]", got, ByParentUID, ByUID)
	}
}

func objectFrom(t *testing.T, text string) *unstructured.Unstructured {
	t.Helper()
	u := &unstructured.Unstructured{}
	if err := yaml.Unmarshal([]byte(text), &u.Object); err != nil {
		t.Fatal(err)
	}
	return u
}

// LabelsOf reads a cached object's labels without a copy, and any other object's as it holds
// them.
func TestLabelsOfReadsAnObjectsLabels(t *testing.T) {
	meta := metav1.ObjectMeta{Name: "c", Namespace: "ns", Labels: map[string]string{"metacel.dev/parent-uid": "u-1"}}
	cached := compact.NewObject(metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"}, meta, nil)
	for _, tt := range []struct {
		name string
		obj  metav1.Object
	}{{"a cached object", cached}, {"an object's metadata", &metav1.ObjectMeta{Labels: meta.Labels}}, {"no labels", &metav1.ObjectMeta{}}} {
		t.Run(tt.name, func(t *testing.T) {
			if got, want := LabelsOf(tt.obj).Get("metacel.dev/parent-uid"), tt.obj.GetLabels()["metacel.dev/parent-uid"]; got != want {
				t.Errorf("LabelsOf: %q, GetLabels: %q", got, want)
			}
		})
	}
	if allocs := testing.AllocsPerRun(100, func() { _ = LabelsOf(cached).Get("metacel.dev/parent-uid") }); allocs != 0 {
		t.Errorf("LabelsOf a cached object allocated %.0f times", allocs)
	}
}

// The pool's caches hold the bodies of objects alike once (compact.Object.Shared): two
// ConfigMaps of one template, each named after its parent, hold one body, and each reads back
// as it came.
func TestTheCachesHoldTheBodyOfObjectsAlikeOnce(t *testing.T) {
	p := NewPool(t.Context(), nil, nil)
	transform := p.keepAtMost(schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}, nil)
	var held []*compact.Object
	for _, parent := range []string{"app-1", "app-2"} {
		meta := metav1.ObjectMeta{Name: parent + "-config", Namespace: "ns",
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "demo/v1", Kind: "MyApp", Name: parent, UID: "u-" + types.UID(parent)}}}
		obj := compact.NewObject(metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"}, meta, []byte(`{"data":{"app":"`+parent+`","url":"http://`+parent+`-config.ns"}}`))
		got, err := transform(obj)
		if err != nil {
			t.Fatal(err)
		}
		held = append(held, got.(*compact.Object))
		u, err := compact.Unstructured(got)
		if err != nil {
			t.Fatal(err)
		}
		if data, _, _ := unstructured.NestedStringMap(u.Object, "data"); data["app"] != parent || data["url"] != "http://"+parent+"-config.ns" {
			t.Errorf("%s reads back as %v", parent, data)
		}
	}
	if &held[0].Raw[0] != &held[1].Raw[0] {
		t.Errorf("two ConfigMaps alike hold a body each: %q, %q", held[0].Raw, held[1].Raw)
	}
}
