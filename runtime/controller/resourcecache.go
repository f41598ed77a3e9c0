package controller

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/runtime/schema"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/tools/cache"

	"metacel.dev/metacel/runtime/render"
	"metacel.dev/metacel/runtime/shard"
)

// resourceCache is the cache of one resource as a controller reads it: one informer of every
// object, or, with sharding, one informer per slot the replica holds, read as one. Slots are
// informers of their own so that when slots move between replicas, those a replica keeps are not
// listed again: only the slots it gains are, and those it loses are released.
type resourceCache struct {
	gvr      schema.GroupVersionResource
	selector string
	handler  cache.ResourceEventHandler
	// index is the index the controller looks its objects up by: byUID (parents), byParentUID
	// (children)
	index string

	mu      sync.RWMutex
	bySlot  map[int]*slotInformer // wholeSlot when not sharded
	sharded bool
	// list is bySlot's informers in slot order, rebuilt when slots change: reads, on every
	// sync, allocate nothing
	list []cache.SharedIndexInformer
	// creates are the children the controller created lately (recentcreates.go)
	creates recentCreates
}

// wholeSlot keys the one informer of a resource that is not sharded.
const wholeSlot = -1

type slotInformer struct {
	informer cache.SharedIndexInformer
	release  func()
	// delivered is done once the informer has synced and its events so far reached the handler
	delivered cache.DoneChecker
}

// newResourceCache returns the cache of a resource filtered by a label selector, indexed by
// index, whose events go to handler, each once creates has noted it; sharded, it holds no slot
// until setSlots.
func (c *Controller) newResourceCache(gvr schema.GroupVersionResource, selector, index string, h cache.ResourceEventHandler, sharded bool) *resourceCache {
	rc := &resourceCache{gvr: gvr, selector: selector, index: index, bySlot: map[int]*slotInformer{}, sharded: sharded}
	rc.handler = noticing{ResourceEventHandler: h, creates: &rc.creates, clock: c.deps.Clock}
	if !sharded {
		inf, release := c.deps.Pool.Acquire(gvr, selector, index)
		rc.bySlot[wholeSlot] = withHandler(inf, release, rc.handler)
		rc.relist()
	}
	return rc
}

// relist rebuilds list from bySlot; the caller holds mu.
func (rc *resourceCache) relist() {
	slots := make([]int, 0, len(rc.bySlot))
	for s := range rc.bySlot {
		slots = append(slots, s)
	}
	slices.Sort(slots)
	list := make([]cache.SharedIndexInformer, len(slots))
	for i, s := range slots {
		list[i] = rc.bySlot[s].informer
	}
	rc.list = list
}

// withHandler adds handler to an informer acquired from the pool; its release removes the
// handler and releases the informer.
func withHandler(inf cache.SharedIndexInformer, release func(), h cache.ResourceEventHandler) *slotInformer {
	reg, err := inf.AddEventHandler(h)
	utilruntime.HandleError(err)
	si := &slotInformer{informer: inf, delivered: inf.HasSyncedChecker(), release: release}
	if err == nil {
		si.delivered = reg.HasSyncedChecker()
		si.release = func() {
			_ = inf.RemoveEventHandler(reg)
			release()
		}
	}
	return si
}

// addSlots acquires the informers of slots, through acquire.
func (rc *resourceCache) addSlots(slots []int, acquire func(slot int) (cache.SharedIndexInformer, func())) {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	for _, slot := range slots {
		if _, ok := rc.bySlot[slot]; ok {
			continue
		}
		inf, release := acquire(slot)
		rc.bySlot[slot] = withHandler(inf, release, rc.handler)
	}
	rc.relist()
}

// dropSlots releases the informers of slots, and forgets the children created lately: a dropped
// slot's deletions are no longer delivered, and a slot taken back lists afresh.
func (rc *resourceCache) dropSlots(slots []int) {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	for _, slot := range slots {
		if si, ok := rc.bySlot[slot]; ok {
			si.release()
			delete(rc.bySlot, slot)
		}
	}
	rc.relist()
	rc.creates.forgetAll()
}

// releaseAll releases every informer.
func (rc *resourceCache) releaseAll() {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	for slot, si := range rc.bySlot {
		si.release()
		delete(rc.bySlot, slot)
	}
	rc.relist()
	rc.creates.forgetAll()
}

// informers returns the informers, in slot order (not to be modified).
func (rc *resourceCache) informers() []cache.SharedIndexInformer {
	rc.mu.RLock()
	defer rc.mu.RUnlock()
	return rc.list
}

// delivered returns what is done once each informer has synced and delivered its events so far.
func (rc *resourceCache) delivered() []cache.DoneChecker {
	rc.mu.RLock()
	defer rc.mu.RUnlock()
	out := make([]cache.DoneChecker, 0, len(rc.bySlot))
	for _, si := range rc.bySlot {
		out = append(out, si.delivered)
	}
	return out
}

// whole returns the informer of a resource that is not sharded (tests fill its cache).
func (rc *resourceCache) whole() cache.SharedIndexInformer {
	rc.mu.RLock()
	defer rc.mu.RUnlock()
	return rc.bySlot[wholeSlot].informer
}

// GetByKey returns the object of a key from whichever informer holds it.
func (rc *resourceCache) GetByKey(key string) (any, bool, error) {
	if infs := rc.informers(); len(infs) == 1 {
		return infs[0].GetIndexer().GetByKey(key)
	}
	for _, inf := range rc.informers() {
		if obj, ok, err := inf.GetIndexer().GetByKey(key); ok || err != nil {
			return obj, ok, err
		}
	}
	return nil, false, nil
}

// ListKeys returns the keys of every object cached.
func (rc *resourceCache) ListKeys() []string {
	var out []string
	for _, inf := range rc.informers() {
		out = append(out, inf.GetIndexer().ListKeys()...)
	}
	return out
}

// List returns every object cached.
func (rc *resourceCache) List() []any {
	if infs := rc.informers(); len(infs) == 1 {
		return infs[0].GetIndexer().List()
	}
	var out []any
	for _, inf := range rc.informers() {
		out = append(out, inf.GetIndexer().List()...)
	}
	return out
}

// ByIndex returns the objects cached under an index value.
func (rc *resourceCache) ByIndex(index, value string) ([]any, error) {
	if infs := rc.informers(); len(infs) == 1 {
		return infs[0].GetIndexer().ByIndex(index, value)
	}
	var out []any
	for _, inf := range rc.informers() {
		objs, err := inf.GetIndexer().ByIndex(index, value)
		if err != nil {
			return nil, err
		}
		out = append(out, objs...)
	}
	return out, nil
}

// Slots, with sharding: see package shard. A controller of a sharded replica syncs the parents of
// the slots its coordinator gives it (FollowSlots). When the API server selects shards, it lists
// and watches each slot's parents only, one informer per slot; otherwise one informer holds every
// parent and the parents of other slots are skipped (CPU and writes split, the parents' memory
// does not): informers filtering what arrives, one per slot, would each receive every parent's
// events, as many times over as the replica holds slots. Its child informers hold each slot's
// children only, whatever the API server, through the label
// metacel.dev/shard-slot that every child carries (render.LabelShardSlot). Related objects are
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
	want    shard.Set
	watched shard.Set
}

// FollowSlots makes the controller sync the parents of the slots held() gives, read when it is
// their turn (calls are serialized, so the last one wins whatever their order), and returns once
// it no longer syncs those of the slots it held before and does not hold now: their syncs under
// way have ended. The slots it gains are synced once their informers have listed, in the
// background. A controller that has stopped follows nothing.
func (c *Controller) FollowSlots(ctx context.Context, held func() shard.Set) {
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
func (c *Controller) setSlots(ctx context.Context, slots shard.Set) {
	sh := c.sharding
	sh.want = slots
	c.narrowSlots(shard.Set(c.share.slots.Load()) & slots)
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
func (c *Controller) takeWhenSynced(ctx context.Context, gained shard.Set) {
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
		c.share.slots.Store(uint64((shard.Set(c.share.slots.Load()) | still) & sh.want))
		c.parentStates.resetInputs()
		c.enqueueAll(c.queue.Add)
		return true, nil
	})
	if err != nil && ctx.Err() == nil {
		utilruntime.HandleError(err)
	}
}

// resourceCaches returns the caches of the parents and of the child resources.
func (c *Controller) resourceCaches() []*resourceCache {
	return append([]*resourceCache{c.parents}, slices.Collect(maps.Values(c.children))...)
}

// slotsSynced reports whether the informers of slots, of every resource, have synced.
func (c *Controller) slotsSynced(slots []int) bool {
	for _, rc := range c.resourceCaches() {
		if !rc.slotsSynced(slots) {
			return false
		}
	}
	return true
}

// slotsSynced reports whether the informers of slots have synced (a cache not sharded by slot
// has its one informer, waited for by Run).
func (rc *resourceCache) slotsSynced(slots []int) bool {
	rc.mu.RLock()
	defer rc.mu.RUnlock()
	if !rc.sharded {
		return true
	}
	for _, slot := range slots {
		if si, ok := rc.bySlot[slot]; ok && !si.informer.HasSynced() {
			return false
		}
	}
	return true
}

// narrowSlots stops syncing the parents of slots outside s, and waits for the syncs under way.
func (c *Controller) narrowSlots(s shard.Set) {
	c.share.slots.Store(uint64(s))
	c.syncing.Lock()
	c.syncing.Unlock() //nolint:staticcheck // an empty critical section: it waits for the syncs under way
}

func (c *Controller) addSlotInformers(slots []int) {
	if c.parents.sharded {
		c.parents.addSlots(slots, func(slot int) (cache.SharedIndexInformer, func()) {
			return c.deps.Pool.AcquireSlot(c.policy.Parent.GVR, c.parents.selector, slot, true, c.parents.index)
		})
	}
	for _, rc := range c.children {
		rc.addSlots(slots, func(slot int) (cache.SharedIndexInformer, func()) {
			return c.deps.Pool.Acquire(rc.gvr, slotSelector(rc.selector, slot), rc.index)
		})
	}
}

func (c *Controller) dropSlotInformers(slots []int) {
	if len(slots) == 0 {
		return
	}
	if c.parents.sharded {
		c.parents.dropSlots(slots)
	}
	for _, rc := range c.children {
		rc.dropSlots(slots)
	}
}

// slotSelector narrows a label selector of children to one slot's.
func slotSelector(selector string, slot int) string {
	return fmt.Sprintf("%s,%s=%d", selector, render.LabelShardSlot, slot)
}

func members(s shard.Set) []int {
	var out []int
	for slot := range shard.Slots {
		if s.Has(slot) {
			out = append(out, slot)
		}
	}
	return out
}
