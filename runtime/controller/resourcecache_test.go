package controller

import (
	"slices"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/cache"

	"metacel.dev/metacel/runtime/shard"
)

// A sharded resource's cache reads its slots' informers as one, and forgets a slot dropped.
func TestASlottedCacheReadsItsSlotsAsOne(t *testing.T) {
	infs := map[int]cache.SharedIndexInformer{}
	rc := &resourceCache{gvr: schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}, bySlot: map[int]*slotInformer{}, sharded: true,
		handler: cache.ResourceEventHandlerFuncs{}}
	rc.addSlots([]int{3, 7}, func(slot int) (cache.SharedIndexInformer, func()) {
		infs[slot] = cache.NewSharedIndexInformer(&cache.ListWatch{}, &unstructured.Unstructured{}, 0, indexers([]string{byUID}))
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
	if objs, _ := rc.ByIndex(byUID, "uid-a"); len(objs) != 1 {
		t.Errorf("ByIndex of slot 3's object: %d objects", len(objs))
	}
	rc.dropSlots([]int{7})
	if _, ok, _ := rc.GetByKey("ns/b"); ok {
		t.Error("GetByKey of a dropped slot's object: found")
	}
	if n := len(rc.List()); n != 1 {
		t.Errorf("List after a slot dropped: %d objects, want 1", n)
	}
}

// Slots given up before their informers have listed hold up none of the slots kept: a replica
// that joins takes all 64 slots, and gives 43 of them up at once as two more replicas join.
func TestSlotsGivenUpBeforeTheyListDoNotHoldUpTheOthers(t *testing.T) {
	h := newHarness(t, copyToSecret())
	lists := make(chan struct{})
	h.client.PrependReactor("list", "*", func(clienttesting.Action) (bool, runtime.Object, error) {
		<-lists // the API server answers no list until the test says
		return false, nil, nil
	})
	h.c.deps.Pool = NewPool(t.Context(), h.client, nil)
	h.c.ShardedBy(true)
	if err := h.c.Watch(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(h.c.release)
	all, kept := ^shard.Set(0), shard.SetOf(shard.Range{From: 0, To: 21})
	h.c.FollowSlots(t.Context(), func() shard.Set { return all })
	h.c.FollowSlots(t.Context(), func() shard.Set { return kept })
	close(lists)
	deadline := time.Now().Add(10 * time.Second)
	for shard.Set(h.c.share.slots.Load()) != kept {
		if time.Now().After(deadline) {
			t.Fatalf("syncs the parents of slots %s, want %s", shard.Set(h.c.share.slots.Load()).String(), kept.String())
		}
		time.Sleep(10 * time.Millisecond) // polling, with a deadline
	}
}
