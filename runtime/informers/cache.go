package informers

import (
	"iter"
	"slices"
	"sync"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/client-go/tools/cache"

	"metacel.dev/metacel/runtime/projection"
)

// Cache is the cache of one resource as a controller reads it: one informer of every
// object, or, with sharding, one informer per slot the replica holds, read as one. Slots are
// informers of their own so that when slots move between replicas, those a replica keeps are not
// listed again: only the slots it gains are, and those it loses are released.
type Cache struct {
	gvr      schema.GroupVersionResource
	selector string
	handler  cache.ResourceEventHandler
	// index is the index the controller looks its objects up by: ByUID (parents), ByParentUID
	// (children)
	index string
	// keep is what the cache keeps of each object (package projection; nil: all of it)
	keep *projection.Fields

	mu      sync.RWMutex
	bySlot  map[int]*slotInformer // wholeSlot when not sharded
	sharded bool
	// list is bySlot's informers in slot order, rebuilt when slots change: reads, on every
	// sync, allocate nothing
	list []cache.SharedIndexInformer
}

// wholeSlot keys the one informer of a resource that is not sharded.
const wholeSlot = -1

type slotInformer struct {
	informer cache.SharedIndexInformer
	release  func()
	// delivered is done once the informer has synced and its events so far reached the handler
	delivered cache.DoneChecker
}

// NewCache returns the cache of a resource filtered by a label selector, indexed by index, whose
// events go to h, keeping of each object what keep keeps (nil: all of it); not sharded, it holds
// pool's informer of every object; sharded, it holds no slot until AddSlots.
func NewCache(pool *Pool, gvr schema.GroupVersionResource, selector, index string, keep *projection.Fields, h cache.ResourceEventHandler, sharded bool) *Cache {
	rc := &Cache{gvr: gvr, selector: selector, index: index, keep: keep, handler: h, bySlot: map[int]*slotInformer{}, sharded: sharded}
	if !sharded {
		inf, release := pool.AcquireKeeping(gvr, selector, keep, index)
		rc.bySlot[wholeSlot] = withHandler(inf, release, rc.handler)
		rc.relist()
	}
	return rc
}

// Fixed returns the cache of a resource held by one informer, not sharded, that the caller runs
// or fills (tests).
func Fixed(gvr schema.GroupVersionResource, inf cache.SharedIndexInformer) *Cache {
	rc := &Cache{gvr: gvr, bySlot: map[int]*slotInformer{wholeSlot: {informer: inf, release: func() {}}}}
	rc.relist()
	return rc
}

// GVR is the cache's resource.
func (rc *Cache) GVR() schema.GroupVersionResource { return rc.gvr }

// Selector is the label selector of the objects cached ("": all).
func (rc *Cache) Selector() string { return rc.selector }

// Keep is what the cache keeps of each object (nil: all of it).
func (rc *Cache) Keep() *projection.Fields { return rc.keep }

// Index is the index the cache's user looks its objects up by.
func (rc *Cache) Index() string { return rc.index }

// Sharded reports whether the cache holds one informer per slot.
func (rc *Cache) Sharded() bool { return rc.sharded }

// relist rebuilds list from bySlot; the caller holds mu.
func (rc *Cache) relist() {
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

// WithHandler adds h to an informer acquired from the pool: release removes the handler and
// releases the informer; delivered is done once the informer has synced and its events so far
// reached h.
func WithHandler(inf cache.SharedIndexInformer, releaseInformer func(), h cache.ResourceEventHandler) (release func(), delivered cache.DoneChecker) {
	si := withHandler(inf, releaseInformer, h)
	return si.release, si.delivered
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

// AddSlots acquires the informers of slots, through acquire.
func (rc *Cache) AddSlots(slots []int, acquire func(slot int) (cache.SharedIndexInformer, func())) {
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

// DropSlots releases the informers of slots.
func (rc *Cache) DropSlots(slots []int) {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	for _, slot := range slots {
		if si, ok := rc.bySlot[slot]; ok {
			si.release()
			delete(rc.bySlot, slot)
		}
	}
	rc.relist()
}

// ReleaseAll releases every informer.
func (rc *Cache) ReleaseAll() {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	for slot, si := range rc.bySlot {
		si.release()
		delete(rc.bySlot, slot)
	}
	rc.relist()
}

// Informers returns the informers, in slot order (not to be modified).
func (rc *Cache) Informers() []cache.SharedIndexInformer {
	rc.mu.RLock()
	defer rc.mu.RUnlock()
	return rc.list
}

// Delivered returns what is done once each informer has synced and delivered its events so far.
func (rc *Cache) Delivered() []cache.DoneChecker {
	rc.mu.RLock()
	defer rc.mu.RUnlock()
	out := make([]cache.DoneChecker, 0, len(rc.bySlot))
	for _, si := range rc.bySlot {
		out = append(out, si.delivered)
	}
	return out
}

// Whole returns the informer of a resource that is not sharded (tests fill its cache).
func (rc *Cache) Whole() cache.SharedIndexInformer {
	rc.mu.RLock()
	defer rc.mu.RUnlock()
	return rc.bySlot[wholeSlot].informer
}

// GetByKey returns the metadata of the object of a key (package compact decodes the object)
// from whichever informer holds it.
func (rc *Cache) GetByKey(key string) (metav1.Object, bool, error) {
	for _, inf := range rc.Informers() {
		if obj, ok, err := inf.GetIndexer().GetByKey(key); err != nil {
			return nil, false, err
		} else if ok {
			m, err := MetaOf(obj)
			return m, err == nil, err
		}
	}
	return nil, false, nil
}

// ListKeys returns the keys of every object cached.
func (rc *Cache) ListKeys() []string {
	var out []string
	for _, inf := range rc.Informers() {
		out = append(out, inf.GetIndexer().ListKeys()...)
	}
	return out
}

// List returns the metadata of every object cached.
func (rc *Cache) List() []metav1.Object {
	var out []metav1.Object
	for _, inf := range rc.Informers() {
		out = appendMeta(out, inf.GetIndexer().List())
	}
	return out
}

// All yields the metadata of every object cached, informer by informer, for a reader that
// visits each once and keeps none: the only thing allocated is client-go's copy of each
// informer's list (16 bytes an object), where List builds a slice of the metadata too.
func (rc *Cache) All() iter.Seq[metav1.Object] {
	return func(yield func(metav1.Object) bool) {
		for _, inf := range rc.Informers() {
			for _, obj := range inf.GetIndexer().List() {
				if m, err := MetaOf(obj); err == nil && !yield(m) {
					return
				}
			}
		}
	}
}

// ByIndex returns the metadata of the objects cached under an index value: of a UID index
// (ByUID, ByParentUID), those of the UID among its bucket's.
func (rc *Cache) ByIndex(index, value string) ([]metav1.Object, error) {
	uidOf, byUID := uidIndexes[index]
	lookup := value
	if byUID {
		lookup = uidBucket(value)
	}
	var out []metav1.Object
	for _, inf := range rc.Informers() {
		objs, err := inf.GetIndexer().ByIndex(index, lookup)
		if err != nil {
			return nil, err
		}
		out = appendMeta(out, objs)
	}
	if byUID {
		out = slices.DeleteFunc(out, func(m metav1.Object) bool { return uidOf(m) != value })
	}
	return out, nil
}

// appendMeta appends the metadata of objs to out (an informer holds objects only: anything else
// is skipped).
func appendMeta(out []metav1.Object, objs []any) []metav1.Object {
	for _, obj := range objs {
		if m, err := MetaOf(obj); err == nil {
			out = append(out, m)
		}
	}
	return out
}

// SlotsSynced reports whether the informers of slots have synced (a cache not sharded by slot
// has its one informer, which its user waits for).
func (rc *Cache) SlotsSynced(slots []int) bool {
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
