package controller

import (
	"testing"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	dynamicfake "k8s.io/client-go/dynamic/fake"
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
