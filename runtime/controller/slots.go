package controller

import (
	"context"
	"fmt"
	"sync"
	"time"

	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/tools/cache"

	"metacel.dev/metacel/runtime/contract"
	"metacel.dev/metacel/runtime/hashslot"
	"metacel.dev/metacel/runtime/informers"
)

// Slots, with sharding: see package shard. A controller of a sharded replica syncs the parents of
// the slots its coordinator gives it (FollowSlots). When the API server selects shards, it lists
// and watches each slot's parents only, one informer per slot; otherwise one informer holds every
// parent and the parents of other slots are skipped (CPU and writes split, the parents' memory
// does not): informers filtering what arrives, one per slot, would each receive every parent's
// events, as many times over as the replica holds slots. Its child informers hold each slot's
// children only, whatever the API server, through the label
// metacel.dev/shard-slot that every child carries (contract.LabelShardSlot). Related objects are
// not sharded: they are read by name or selector, whatever the parent.

// ShardedBy makes the controller sync only the parents of the slots given by SetSlots, from none;
// serverSide says whether the API server honours shard selectors. Call it before Watch.
func (c *Controller) ShardedBy(serverSide bool) {
	c.sharding = &sharding{serverSide: serverSide}
	c.share.slots.Store(0)
	c.share.sharded.Store(true)
}

// sharding is how a sharded controller watches its slots.
type sharding struct {
	serverSide bool
	// mu serializes the moves between slots, and the release of the informers when the
	// controller stops (stopped), after which it moves no more; want is the slots last given,
	// watched the slots whose informers it has
	mu      sync.Mutex
	stopped bool
	want    hashslot.Set
	watched hashslot.Set
}

// FollowSlots makes the controller sync the parents of the slots held() gives, read when it is
// their turn (calls are serialized, so the last one wins whatever their order), and returns once
// it no longer syncs those of the slots it held before and does not hold now: their syncs under
// way have ended. The slots it gains are synced once their informers have listed, in the
// background. A controller that has stopped follows nothing.
func (c *Controller) FollowSlots(ctx context.Context, held func() hashslot.Set) {
	if c.sharding == nil {
		return
	}
	c.sharding.mu.Lock()
	defer c.sharding.mu.Unlock()
	if c.sharding.stopped {
		return
	}
	c.setSlots(ctx, held())
}

// setSlots moves the controller from the slots it holds to slots: it lets go of the slots
// given up now (their syncs under way end before it returns), and takes the slots gained once
// their informers have synced, in the background, so that a replica's coordinator is never held
// up by a list (its Lease must be renewed meanwhile). The caller holds c.sharding.mu.
func (c *Controller) setSlots(ctx context.Context, slots hashslot.Set) {
	sh := c.sharding
	sh.want = slots
	c.narrowSlots(hashslot.Set(c.share.slots.Load()) & slots)
	c.dropSlotInformers(members(sh.watched &^ slots))
	gained := slots &^ sh.watched
	sh.watched = slots
	if gained == 0 {
		return
	}
	c.addSlotInformers(members(gained))
	go c.takeWhenSynced(ctx, gained)
}

// takeWhenSynced starts syncing the parents of slots gained once their informers have synced,
// those still wanted then: a slot given up meanwhile (its informer released, never to sync)
// holds up none of the others.
func (c *Controller) takeWhenSynced(ctx context.Context, gained hashslot.Set) {
	sh := c.sharding
	err := wait.PollUntilContextCancel(ctx, 50*time.Millisecond, true, func(context.Context) (bool, error) {
		sh.mu.Lock()
		defer sh.mu.Unlock()
		if sh.stopped {
			return true, nil
		}
		still := gained & sh.watched
		if !c.slotsSynced(members(still)) {
			return false, nil
		}
		c.share.slots.Store(uint64((hashslot.Set(c.share.slots.Load()) | still) & sh.want))
		c.parentStates.resetInputs()
		c.enqueueAll(c.queue.Add)
		return true, nil
	})
	if err != nil && ctx.Err() == nil {
		utilruntime.HandleError(err)
	}
}

// resourceCaches returns the caches of the parents and of the child resources.
func (c *Controller) resourceCaches() []*informers.Cache {
	out := []*informers.Cache{c.parents}
	for _, rc := range c.children {
		out = append(out, rc.Cache)
	}
	return out
}

// slotsSynced reports whether the informers of slots, of every resource, have synced.
func (c *Controller) slotsSynced(slots []int) bool {
	for _, rc := range c.resourceCaches() {
		if !rc.SlotsSynced(slots) {
			return false
		}
	}
	return true
}

// narrowSlots stops syncing the parents of slots outside s, and waits for the syncs under way.
func (c *Controller) narrowSlots(s hashslot.Set) {
	c.share.slots.Store(uint64(s))
	c.syncing.Lock()
	c.syncing.Unlock() //nolint:staticcheck // an empty critical section: it waits for the syncs under way
}

func (c *Controller) addSlotInformers(slots []int) {
	if c.parents.Sharded() {
		c.parents.AddSlots(slots, func(slot int) (cache.SharedIndexInformer, func()) {
			return c.deps.Pool.AcquireSlot(c.policy.Parent.GVR, c.parents.Selector(), slot, true, c.parents.Index())
		})
	}
	for _, rc := range c.children {
		rc.AddSlots(slots, func(slot int) (cache.SharedIndexInformer, func()) {
			return c.deps.Pool.Acquire(rc.GVR(), slotSelector(rc.Selector(), slot), rc.Index())
		})
	}
}

func (c *Controller) dropSlotInformers(slots []int) {
	if len(slots) == 0 {
		return
	}
	if c.parents.Sharded() {
		c.parents.DropSlots(slots)
	}
	for _, rc := range c.children {
		rc.dropSlots(slots)
	}
}

// slotSelector narrows a label selector of children to one slot's.
func slotSelector(selector string, slot int) string {
	return fmt.Sprintf("%s,%s=%d", selector, contract.LabelShardSlot, slot)
}

func members(s hashslot.Set) []int {
	var out []int
	for slot := range hashslot.Count {
		if s.Has(slot) {
			out = append(out, slot)
		}
	}
	return out
}
