package informers

import (
	"slices"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/tools/cache"
)

// A sharded resource's cache reads its slots' informers as one, and forgets a slot dropped.
func TestASlottedCacheReadsItsSlotsAsOne(t *testing.T) {
	infs := map[int]cache.SharedIndexInformer{}
	rc := NewCache(nil, schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}, "", ByUID, nil, cache.ResourceEventHandlerFuncs{}, true)
	rc.AddSlots([]int{3, 7}, func(slot int) (cache.SharedIndexInformer, func()) {
		infs[slot] = cache.NewSharedIndexInformer(&cache.ListWatch{}, &unstructured.Unstructured{}, 0, Indexers([]string{ByUID}))
		return infs[slot], func() {}
	})
	add := func(slot int, name, uid string) {
		obj := objectFrom(t, `{apiVersion: v1, kind: ConfigMap, metadata: {name: `+name+`, namespace: ns, uid: `+uid+`}}`)
		if err := infs[slot].GetIndexer().Add(obj); err != nil {
			t.Fatal(err)
		}
	}
	add(3, "a", "uid-a")
	add(7, "b", "uid-b")

	if keys := rc.ListKeys(); !slices.Equal(keys, []string{"ns/a", "ns/b"}) {
		t.Errorf("ListKeys = %v", keys)
	}
	if _, ok, _ := rc.GetByKey("ns/b"); !ok {
		t.Error("GetByKey of slot 7's object: not found")
	}
	if objs, _ := rc.ByIndex(ByUID, "uid-a"); len(objs) != 1 {
		t.Errorf("ByIndex of slot 3's object: %d objects", len(objs))
	}
	rc.DropSlots([]int{7})
	if _, ok, _ := rc.GetByKey("ns/b"); ok {
		t.Error("GetByKey of a dropped slot's object: found")
	}
	if n := len(rc.List()); n != 1 {
		t.Errorf("List after a slot dropped: %d objects, want 1", n)
	}
}
