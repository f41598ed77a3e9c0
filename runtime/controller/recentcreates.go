package controller

import (
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilcache "k8s.io/apimachinery/pkg/util/cache"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/clock"

	"metacel.dev/metacel/runtime/contract"
	"metacel.dev/metacel/runtime/informers"
)

// A child that a sync creates reaches the child cache through a watch, some milliseconds after
// the create returned. A sync of the same parent that read the cache in between (the parent's
// own status write brings one) found no child and sent the create again: the API server answered
// 409 AlreadyExists, and the sync read the child and took it as it was. Three sharded replicas
// on two cores sent 1,201-1,207 Pod creates for 1,200 MyApps, each extra one by the replica that
// had created the Pod 30-160 ms before, whose Pod watch (one per slot) delivered the Pod after
// the parent's later status event.
//
// So each child cache remembers the children the controller created lately, as the API server
// returned them; a sync that finds one missing takes it as it would after a 409 (takeExisting),
// without a request. A child stays remembered a little while after the cache delivered it, for
// the syncs that read the cache just before; its deletion ends that at once.

// Lifetimes of a child remembered: undeliveredFor when its cache delivers nothing of it (the
// watch restarted after the child was deleted, say), far longer than a watch takes and short
// enough that a child gone unseen is created again soon; deliveredFor after the cache delivered
// it, longer than a sync takes between its read of the cache and its create.
const (
	undeliveredFor = 10 * time.Second
	deliveredFor   = 2 * time.Second
)

// recentCreatesMax bounds the children remembered by one child cache, the least recently
// created or delivered forgotten first: far more than a controller's workers create in the
// 30-160 ms a watch takes to deliver them, and a bound on the memory of children remembered
// (expired ones stay until pushed out). A child forgotten early costs one create answered 409
// AlreadyExists and a read.
const recentCreatesMax = 1024

// recentCreates are the children the controller created lately, by namespace/name, in an
// expiring LRU cache (k8s.io/apimachinery/pkg/util/cache, the store under client-go's
// MutationCache), each with its own lifetime on the controller's clock. MutationCache itself
// (NewIntegerResourceVersionMutationCache, includeAdds) does not fit: it holds 100 objects, each
// for the one ttl it was made with, on the system's clock (no fake one in tests); it cannot forget
// an object deleted (deleted, with its UID check) nor all (forgetAll); and an object its store
// does not hold, the very case here, is forgotten at the first GetByKey that returns it (it is
// compared with itself, found no newer, removed), so a second sync before the watch delivers
// the child would create it again. The zero value is ready.
type recentCreates struct {
	// mu makes one step of a read and the write that follows it (delivered, deleted), and of
	// setting the time the LRU reads
	mu  sync.Mutex
	lru *utilcache.LRUExpireCache // of *recentCreate, by namespace/name; nil until the first add
	// now is the LRU's clock: the time the caller gave, set before each call
	now callTime
}

type recentCreate struct {
	obj       *unstructured.Unstructured
	delivered bool // the cache delivered it: it is remembered deliveredFor from then
}

// callTime is a clock that reads the time it was set to: the time the caller of recentCreates
// gave.
type callTime struct{ t time.Time }

func (c *callTime) Now() time.Time { return c.t }

// add remembers a child as its create returned it, for undeliveredFor.
func (rc *recentCreates) add(obj *unstructured.Unstructured, now time.Time) {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	if rc.lru == nil {
		rc.lru = utilcache.NewLRUExpireCacheWithClock(recentCreatesMax, &rc.now)
	}
	rc.now.t = now
	rc.lru.Add(obj.GetNamespace()+"/"+obj.GetName(), &recentCreate{obj: obj}, undeliveredFor)
}

// lookup returns the child of that name created lately for the parent of that UID, or nil.
func (rc *recentCreates) lookup(namespace, name, parentUID string, now time.Time) *unstructured.Unstructured {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	r := rc.getLocked(namespace+"/"+name, now)
	if r == nil || r.obj.GetLabels()[contract.LabelParentUID] != parentUID {
		return nil // none, or an earlier parent's of the same name
	}
	return r.obj
}

// delivered notes that the cache delivered a child created lately: it is remembered deliveredFor
// from now.
func (rc *recentCreates) delivered(obj any, now time.Time) {
	rc.update(obj, now, func(key string, r *recentCreate) {
		if !r.delivered {
			rc.lru.Add(key, &recentCreate{obj: r.obj, delivered: true}, deliveredFor)
		}
	})
}

// deleted forgets a child created lately once the cache delivers its deletion.
func (rc *recentCreates) deleted(obj any) {
	rc.update(obj, time.Time{}, func(key string, _ *recentCreate) { rc.lru.Remove(key) })
}

// update calls f, under the lock, with the child remembered that is obj (its name and UID).
func (rc *recentCreates) update(obj any, now time.Time, f func(key string, r *recentCreate)) {
	m, err := informers.MetaOf(obj)
	if err != nil {
		return
	}
	rc.mu.Lock()
	defer rc.mu.Unlock()
	key := m.GetNamespace() + "/" + m.GetName()
	if r := rc.getLocked(key, now); r != nil && r.obj.GetUID() == m.GetUID() {
		f(key, r)
	}
}

// getLocked returns the child remembered under key, unexpired at now (the zero time: expired or
// not), or nil.
func (rc *recentCreates) getLocked(key string, now time.Time) *recentCreate {
	if rc.lru == nil {
		return nil
	}
	rc.now.t = now
	v, ok := rc.lru.Get(key)
	if !ok {
		return nil
	}
	return v.(*recentCreate)
}

// forgetAll forgets every child remembered: those of slots let go of may never reach the cache
// again, nor their deletions.
func (rc *recentCreates) forgetAll() {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	rc.lru = nil
}

// childCache is the cache of a child resource, with the children the controller created lately.
type childCache struct {
	*informers.Cache
	creates recentCreates
}

// newChildCache returns the cache of a child resource, whose events go to h, each once creates
// has noted it.
func newChildCache(pool *informers.Pool, gvr schema.GroupVersionResource, h cache.ResourceEventHandler, sharded bool, clk clock.PassiveClock) *childCache {
	cc := &childCache{}
	noticed := noticing{ResourceEventHandler: h, creates: &cc.creates, clock: clk}
	cc.Cache = informers.NewCache(pool, gvr, informers.ManagedSelector, informers.ByParentUID, noticed, sharded)
	return cc
}

// dropSlots releases the informers of slots, and forgets the children created lately: a dropped
// slot's deletions are no longer delivered, and a slot taken back lists afresh.
func (cc *childCache) dropSlots(slots []int) {
	cc.DropSlots(slots)
	cc.creates.forgetAll()
}

// releaseAll releases every informer, and forgets the children created lately.
func (cc *childCache) releaseAll() {
	cc.ReleaseAll()
	cc.creates.forgetAll()
}

// noticing passes a cache's events to its handler, after telling creates of them.
type noticing struct {
	cache.ResourceEventHandler
	creates *recentCreates
	// clock is the controller's (nil: the system's)
	clock clock.PassiveClock
}

func (n noticing) now() time.Time {
	if n.clock == nil {
		return time.Now()
	}
	return n.clock.Now()
}

func (n noticing) OnAdd(obj any, isInInitialList bool) {
	n.creates.delivered(obj, n.now())
	n.ResourceEventHandler.OnAdd(obj, isInInitialList)
}

func (n noticing) OnUpdate(oldObj, newObj any) {
	n.creates.delivered(newObj, n.now())
	n.ResourceEventHandler.OnUpdate(oldObj, newObj)
}

func (n noticing) OnDelete(obj any) {
	n.creates.deleted(obj)
	n.ResourceEventHandler.OnDelete(obj)
}
