package controller

import (
	"context"
	"fmt"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/runtime/schema"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/tools/cache"

	"metacel.dev/metacel/runtime/contract"
	"metacel.dev/metacel/runtime/hashslot"
	"metacel.dev/metacel/runtime/informers"
)

// Slots, with sharding: see package shard. A controller of a sharded replica syncs the parents of
// the slots its coordinator gives it (Controller.FollowSlots). When the API server selects shards, it lists
// and watches each slot's parents only, one informer per slot; otherwise one informer holds every
// parent and the parents of other slots are skipped (CPU and writes split, the parents' memory
// does not): informers filtering what arrives, one per slot, would each receive every parent's
// events, as many times over as the replica holds slots. Its child informers hold each slot's
// children only, whatever the API server, through the label
// metacel.dev/shard-slot that every child carries (contract.LabelShardSlot). Related objects are
// not sharded: they are read by name or selector, whatever the parent.

// newSharding makes a controller sync only the parents of the slots given by follow, from none;
// serverSide says whether the API server honours shard selectors (Options.Sharded). resync
// queues every parent again, its inputs forgotten.
func newSharding(serverSide bool, cs *caches, sh *share, syncing *sync.RWMutex, pool *informers.Pool, parentGVR schema.GroupVersionResource, resync func()) *sharding {
	sh.sharded.Store(true)
	sh.setSlots(0)
	return &sharding{serverSide: serverSide, caches: cs, share: sh, syncing: syncing, pool: pool, parentGVR: parentGVR, resync: resync}
}

// sharding is how a sharded controller watches its slots, and moves between them.
type sharding struct {
	serverSide bool
	// caches are the controller's, share what it syncs, syncing held by each sync, and resync
	// queues every parent again, its inputs forgotten
	caches  *caches
	share   *share
	syncing *sync.RWMutex
	resync  func()
	pool    *informers.Pool
	// parentGVR is the resource of the parents
	parentGVR schema.GroupVersionResource
	// mu serializes the moves between slots and stop (stopped), after which it moves no more;
	// want is the slots last given,
	// watched the slots whose informers it has
	mu      sync.Mutex
	stopped bool
	want    hashslot.Set
	watched hashslot.Set
}

// follow makes the controller sync the parents of the slots held() gives, read when it is
// their turn (calls are serialized, so the last one wins whatever their order), and returns once
// it no longer syncs those of the slots it held before and does not hold now: their syncs under
// way have ended. The slots it gains are synced once their informers have listed, in the
// background. Once stopped, it follows nothing.
func (sh *sharding) follow(ctx context.Context, held func() hashslot.Set) {
	sh.mu.Lock()
	defer sh.mu.Unlock()
	if sh.stopped {
		return
	}
	sh.setSlots(ctx, held())
}

// stop makes the sharding follow no more slots: the controller releases its informers.
func (sh *sharding) stop() {
	sh.mu.Lock()
	defer sh.mu.Unlock()
	sh.stopped = true
}

// setSlots moves the controller from the slots it holds to slots: it lets go of the slots
// given up now (their syncs under way end before it returns), and takes the slots gained once
// their informers have synced, in the background, so that a replica's coordinator is never held
// up by a list (its Lease must be renewed meanwhile). The caller holds sh.mu.
func (sh *sharding) setSlots(ctx context.Context, slots hashslot.Set) {
	sh.want = slots
	sh.narrowSlots(hashslot.Set(sh.share.slots.Load()) & slots)
	sh.dropSlotInformers(members(sh.watched &^ slots))
	gained := slots &^ sh.watched
	sh.watched = slots
	if gained == 0 {
		return
	}
	sh.addSlotInformers(members(gained))
	go sh.takeWhenSynced(ctx, gained)
}

// takeWhenSynced starts syncing the parents of slots gained once their informers have synced,
// those still wanted then: a slot given up meanwhile (its informer released, never to sync)
// holds up none of the others.
func (sh *sharding) takeWhenSynced(ctx context.Context, gained hashslot.Set) {
	err := wait.PollUntilContextCancel(ctx, 50*time.Millisecond, true, func(context.Context) (bool, error) {
		sh.mu.Lock()
		defer sh.mu.Unlock()
		if sh.stopped {
			return true, nil
		}
		still := gained & sh.watched
		if !sh.slotsSynced(members(still)) {
			return false, nil
		}
		sh.share.setSlots((hashslot.Set(sh.share.slots.Load()) | still) & sh.want)
		sh.resync()
		return true, nil
	})
	if err != nil && ctx.Err() == nil {
		utilruntime.HandleError(err)
	}
}

// slotsSynced reports whether the informers of slots, of every resource, have synced.
func (sh *sharding) slotsSynced(slots []int) bool {
	for _, rc := range sh.caches.all() {
		if !rc.SlotsSynced(slots) {
			return false
		}
	}
	return true
}

// narrowSlots stops syncing the parents of slots outside s, and waits for the syncs under way.
func (sh *sharding) narrowSlots(s hashslot.Set) {
	sh.share.setSlots(s)
	sh.syncing.Lock()
	sh.syncing.Unlock() //nolint:staticcheck // an empty critical section: it waits for the syncs under way
}

func (sh *sharding) addSlotInformers(slots []int) {
	if sh.caches.parents.Sharded() {
		sh.caches.parents.AddSlots(slots, func(slot int) (cache.SharedIndexInformer, func()) {
			return sh.pool.AcquireSlot(sh.parentGVR, sh.caches.parents.Selector(), slot, true, sh.caches.parents.Index())
		})
	}
	for _, rc := range sh.caches.children {
		rc.AddSlots(slots, func(slot int) (cache.SharedIndexInformer, func()) {
			return sh.pool.AcquireKeeping(rc.GVR(), slotSelector(rc.Selector(), slot), rc.Keep(), rc.Index())
		})
	}
}

func (sh *sharding) dropSlotInformers(slots []int) {
	if len(slots) == 0 {
		return
	}
	if sh.caches.parents.Sharded() {
		sh.caches.parents.DropSlots(slots)
	}
	for _, rc := range sh.caches.children {
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
