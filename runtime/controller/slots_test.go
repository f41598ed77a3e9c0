package controller

import (
	"fmt"
	"testing"

	"k8s.io/apimachinery/pkg/runtime"
	clienttesting "k8s.io/client-go/testing"

	"metacel.dev/metacel/runtime/hashslot"
	"metacel.dev/metacel/runtime/informers"
)

// Slots given up before their informers have listed hold up none of the slots kept: a replica
// that joins takes all 64 slots, and gives 43 of them up at once as two more replicas join.
func TestSlotsGivenUpBeforeTheyListDoNotHoldUpTheOthers(t *testing.T) {
	h := newHarness(t, copyToSecret())
	lists := make(chan struct{})
	h.client.PrependReactor("list", "*", func(clienttesting.Action) (bool, runtime.Object, error) {
		<-lists // the API server answers no list until the test says
		return false, nil, nil
	})
	h.c.deps.Pool = informers.NewPool(t.Context(), h.client, nil)
	h.c.sharding = newSharding(true, &h.c.caches, &h.c.share, &h.c.syncing, h.c.deps.Pool, h.c.policy.Parent.GVR, h.c.resyncAll)
	if err := h.c.Watch(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(h.c.release)
	all, kept := ^hashslot.Set(0), hashslot.SetOf(hashslot.Range{From: 0, To: 21})
	h.c.FollowSlots(t.Context(), func() hashslot.Set { return all })
	h.c.FollowSlots(t.Context(), func() hashslot.Set { return kept })
	close(lists)
	eventually(t, "the controller to sync the parents of the slots kept only", func() error {
		if got := hashslot.Set(h.c.share.slots.Load()); got != kept {
			return fmt.Errorf("syncs the parents of slots %s, want %s", got.String(), kept.String())
		}
		return nil
	})
}
