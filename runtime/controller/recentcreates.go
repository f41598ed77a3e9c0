package controller

import (
	"context"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/clock"

	"metacel.dev/metacel/runtime/compact"
	"metacel.dev/metacel/runtime/contract"
	"metacel.dev/metacel/runtime/informers"
	"metacel.dev/metacel/runtime/projection"
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
// returned them, held as the cache would hold them (compact.AsCached: the decoded response took
// about 10 KB a Pod, and a converge of 1,000 parents remembered a thousand at once); a sync that
// finds one missing takes it as it would after a 409 (takeExisting), without a request. A child
// stays remembered a little while after the cache delivered it, for the syncs that read the
// cache just before; its deletion ends that at once.

// Lifetimes of a child remembered: undeliveredFor when its cache delivers nothing of it (the
// watch restarted after the child was deleted, say), far longer than a watch takes and short
// enough that a child gone unseen is created again soon; deliveredFor after the cache delivered
// it, longer than a sync takes between its read of the cache and its create.
const (
	undeliveredFor = 10 * time.Second
	deliveredFor   = 2 * time.Second
)

// sweepEvery is how often an add forgets the children remembered long enough: a sweep reads every
// child remembered, so one at each add made a burst of creates quadratic (17-30 µs an add with
// 1,000 remembered, BenchmarkRecentCreates); a child expired meanwhile is forgotten by its lookup.
const sweepEvery = deliveredFor

// recentCreates are the children the controller created lately, by namespace/name: a map of our
// own. client-go's MutationCache (NewIntegerResourceVersionMutationCache, includeAdds), made for
// reading one's own writes, does not fit: it holds 100 objects, each for the one ttl it was made
// with, on the system's clock; it cannot forget an object deleted (deleted, with its UID check)
// nor every object (forgetAll); and an object its store does not hold, the very case here, is
// forgotten at the first GetByKey that returns it (compared with itself, found no newer), so a
// second sync before the watch delivers the child would create it again. The expiring LRU under
// it (apimachinery's LRUExpireCache) needs a bound: a burst of creates beyond it (a start over
// thousands of parents) would forget children early, each costing a create answered 409 and a
// read, which is what this store is for. The zero value is ready.
type recentCreates struct {
	mu     sync.Mutex
	byName map[string]recentCreate
	// swept is when an add last forgot the children remembered long enough
	swept time.Time
}

type recentCreate struct {
	// obj is the child as its cache would hold it (compact.AsCached)
	obj *compact.Object
	// created is when the create returned; delivered when the cache delivered the child (zero:
	// not yet)
	created, delivered time.Time
}

func (r recentCreate) expired(now time.Time) bool {
	if r.delivered.IsZero() {
		return now.Sub(r.created) > undeliveredFor
	}
	return now.Sub(r.delivered) > deliveredFor
}

// add remembers a child as its create returned it, held as its cache holds it, and, every
// sweepEvery, forgets those remembered long enough.
func (rc *recentCreates) add(obj *compact.Object, now time.Time) {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	if now.Sub(rc.swept) >= sweepEvery {
		rc.sweepLocked(now)
	}
	if rc.byName == nil {
		rc.byName = map[string]recentCreate{}
	}
	rc.byName[obj.GetNamespace()+"/"+obj.GetName()] = recentCreate{obj: obj, created: now}
}

// sweep forgets the children remembered long enough.
func (rc *recentCreates) sweep(now time.Time) {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	rc.sweepLocked(now)
}

// sweepLocked forgets the children remembered long enough; the caller holds mu.
func (rc *recentCreates) sweepLocked(now time.Time) {
	for name, r := range rc.byName {
		if r.expired(now) {
			delete(rc.byName, name)
		}
	}
	rc.swept = now
}

// lookup returns the child of that name created lately for the parent of that UID, decoded
// afresh as a read of the cache decodes it, or nil.
func (rc *recentCreates) lookup(namespace, name, parentUID string, now time.Time) *unstructured.Unstructured {
	obj := rc.remembered(namespace, name, parentUID, now)
	if obj == nil {
		return nil
	}
	u, err := compact.Unstructured(obj)
	if err != nil {
		return nil // as not remembered: the create is sent, and a 409 reads the child
	}
	return u
}

// remembered returns the child of that name created lately for the parent of that UID, as held,
// or nil.
func (rc *recentCreates) remembered(namespace, name, parentUID string, now time.Time) *compact.Object {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	r, ok := rc.byName[namespace+"/"+name]
	switch {
	case !ok:
		return nil
	case r.expired(now):
		delete(rc.byName, namespace+"/"+name)
		return nil
	case r.obj.LabelSet().Get(contract.LabelParentUID) != parentUID:
		return nil // an earlier parent's of the same name
	}
	return r.obj
}

// delivered notes that the cache delivered a child created lately.
func (rc *recentCreates) delivered(obj any, now time.Time) {
	rc.update(obj, func(name string, r recentCreate) {
		if r.delivered.IsZero() {
			r.delivered = now
			rc.byName[name] = r
		}
	})
}

// deleted forgets a child created lately once the cache delivers its deletion.
func (rc *recentCreates) deleted(obj any) {
	rc.update(obj, func(name string, _ recentCreate) { delete(rc.byName, name) })
}

// update calls f, under the lock, with the child remembered that is obj (its name and UID).
func (rc *recentCreates) update(obj any, f func(name string, r recentCreate)) {
	m, err := informers.MetaOf(obj)
	if err != nil {
		return
	}
	rc.mu.Lock()
	defer rc.mu.Unlock()
	name := m.GetNamespace() + "/" + m.GetName()
	if r, ok := rc.byName[name]; ok && r.obj.GetUID() == m.GetUID() {
		f(name, r)
	}
}

// forgetOldCreates forgets, in every child cache, the children remembered long enough: the adds
// that sweep stop with the last create of a burst, and what it remembered would stay for as long
// as no child is created (the whole objects of thousands of Pods, after a start).
func (c *Controller) forgetOldCreates(context.Context) {
	now := c.deps.Clock.Now()
	for _, cc := range c.caches.children {
		cc.creates.sweep(now)
	}
}

// forgetAll forgets every child remembered: those of slots let go of may never reach the cache
// again, nor their deletions.
func (rc *recentCreates) forgetAll() {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	clear(rc.byName)
}

// childCache is the cache of a child resource, with the children the controller created lately.
type childCache struct {
	*informers.Cache
	creates recentCreates
}

// newChildCache returns the cache of a child resource, whose events go to h, each once creates
// has noted it.
func newChildCache(pool *informers.Pool, gvr schema.GroupVersionResource, keep *projection.Fields, h cache.ResourceEventHandler, sharded bool, clk clock.PassiveClock) *childCache {
	cc := &childCache{}
	noticed := noticing{ResourceEventHandler: h, creates: &cc.creates, clock: clk}
	cc.Cache = informers.NewCache(pool, gvr, informers.ManagedSelector, informers.ByParentUID, keep, noticed, sharded)
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
