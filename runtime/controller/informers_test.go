package controller

import (
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	dynamicfake "k8s.io/client-go/dynamic/fake"

	"metacel.dev/metacel/runtime/apply"
)

func TestPoolSharesReleasesAndRetires(t *testing.T) {
	widgets := schema.GroupVersionResource{Group: "example.com", Version: "v1", Resource: "widgets"}
	cms := schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}
	client := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), map[schema.GroupVersionResource]string{
		widgets: "WidgetList", cms: "ConfigMapList",
	})
	pool := NewPool(t.Context(), client)
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

func TestACachedObjectKeepsOnlyWhatTheRuntimeReads(t *testing.T) {
	obj := objectFrom(t, `{apiVersion: v1, kind: ConfigMap, metadata: {name: x, namespace: ns,
  annotations: {kubectl.kubernetes.io/last-applied-configuration: "{...the whole object...}", keep: "me"},
  managedFields: [
    {manager: metacel, operation: Apply, fieldsType: FieldsV1, fieldsV1: {"f:data": {"f:a": {}}}},
    {manager: metacel, operation: Apply, subresource: status, fieldsType: FieldsV1, fieldsV1: {"f:status": {}}},
    {manager: kubectl, operation: Update, time: "2026-11-23T12:00:00Z", fieldsType: FieldsV1, fieldsV1: {"f:data": {"f:b": {}}}}]},
  data: {a: "1", b: "2"}}`)
	got, err := slim(obj)
	if err != nil {
		t.Fatal(err)
	}
	u := got.(*unstructured.Unstructured)
	if a := u.GetAnnotations(); a[lastApplied] != "" || a["keep"] != "me" {
		t.Errorf("annotations %v: want last-applied-configuration dropped, the others kept", a)
	}
	mf := u.GetManagedFields()
	if len(mf) != 3 || mf[0].FieldsV1 == nil || mf[1].FieldsV1 == nil || mf[2].FieldsV1 != nil || mf[2].Manager != "kubectl" || mf[2].Time == nil {
		t.Errorf("managed fields %+v: want metacel's whole, kubectl's without its fields but with its name and time", mf)
	}
	if !apply.AppliedBy(u) || u.Object["data"].(map[string]any)["b"] != "2" {
		t.Error("the object itself must be untouched")
	}
}
