package informers

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"unique"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/tools/cache"

	"metacel.dev/metacel/runtime/compact"
	"metacel.dev/metacel/runtime/contract"
	"metacel.dev/metacel/runtime/hashslot"
	"metacel.dev/metacel/runtime/projection"
)

// Index names of every pooled informer.
const (
	// ByParentUID indexes children by their contract.LabelParentUID label, and is named after it.
	ByParentUID = contract.LabelParentUID
	// ByUID indexes objects by their own UID (parents, to route child events).
	ByUID = "uid"
)

// ManagedSelector selects the objects metacel manages: children are watched through it.
var ManagedSelector = contract.LabelManagedBy + "=" + contract.ManagedByValue

// indexFuncs are the indexes a pooled informer may keep. Each keeps only those its users look
// objects up by (Acquire's indexes). The UID indexes keep a bucket of each UID (uidBucket), not
// the UID itself: client-go's index holds a set per value, and a set of one object costs about 290
// bytes with its entry (BenchmarkUIDIndex), so the two UID indexes held about 58 MB of the 416 MB
// a controller of 100,000 parents with a Pod each kept live. A set per bucket holds the keys of
// several objects, about 90 bytes an object, and Cache.ByIndex keeps, of a bucket's objects, those
// of the UID asked.
var indexFuncs = cache.Indexers{
	// related objects chosen by a selector are looked up in their namespace
	cache.NamespaceIndex: cache.MetaNamespaceIndexFunc,
	ByParentUID:          bucketOf(ByParentUID),
	ByUID:                bucketOf(ByUID),
}

// uidIndexes are the indexes of a UID, by index name: each object's UID under it ("": none).
var uidIndexes = map[string]func(metav1.Object) string{
	ByParentUID: func(m metav1.Object) string { return LabelsOf(m).Get(contract.LabelParentUID) },
	ByUID:       func(m metav1.Object) string { return string(m.GetUID()) },
}

// uidBucket is the bucket of a UID: the first 14 of its 128 bits, 16,384 buckets of the API
// server's random UIDs. A bucket of up to 8 keys costs client-go's index what a bucket of one
// does, and at 100,000 objects a bucket holds about 6, which a lookup reads (BenchmarkUIDIndex).
// A UID not of hex digits is bucketed by its first 4 characters.
func uidBucket(uid string) string {
	if len(uid) < 4 {
		return uid
	}
	if v, ok := hexValue(uid[3]); ok {
		return uid[:3] + quarters[v>>2]
	}
	return uid[:4]
}

// quarters name the 4 quarters of a hex digit's values, distinct from any hex digit.
var quarters = [4]string{"w", "x", "y", "z"}

func hexValue(c byte) (byte, bool) {
	switch {
	case '0' <= c && c <= '9':
		return c - '0', true
	case 'a' <= c && c <= 'f':
		return c - 'a' + 10, true
	}
	return 0, false
}

// bucketOf is the index function of a UID index: the bucket of each object's UID.
func bucketOf(index string) cache.IndexFunc {
	uidOf := uidIndexes[index]
	return func(obj any) ([]string, error) {
		m, err := MetaOf(obj)
		if err != nil {
			return nil, err
		}
		if uid := uidOf(m); uid != "" {
			// interned: the index keeps it, and a UID's prefix may be a slice of a larger buffer
			return []string{unique.Make(uidBucket(uid)).Value()}, nil
		}
		return nil, nil
	}
}

// MetaOf returns the metadata of a cached object, or of the last state of a deleted one.
func MetaOf(obj any) (metav1.Object, error) {
	if t, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = t.Obj
	}
	m, ok := obj.(metav1.Object)
	if !ok {
		return nil, fmt.Errorf("not an object: %T", obj)
	}
	return m, nil
}

// LabelsOf returns the labels of a cached object without a copy when the cache holds them as
// compact.Object does (GetLabels builds a map at each call): only to be read.
func LabelsOf(m metav1.Object) labels.Labels {
	if l, ok := m.(interface{ LabelSet() labels.Labels }); ok {
		return l.LabelSet()
	}
	return labels.Set(m.GetLabels())
}

// Pool shares informers between controllers, one per resource and label selector, started on
// first use and stopped when the last user releases it. With a compact.Client, caches hold
// *compact.Object (read them with compact.Unstructured); without, dynamic informers hold
// *unstructured.Unstructured, slimmed (tests use this).
type Pool struct {
	ctx     context.Context
	client  dynamic.Interface
	compact *compact.Client
	// maxKept is the size above which a cached object's body is not kept (compact.Omit)
	maxKept int

	mu      sync.Mutex
	entries map[informerKey]*poolEntry
	// retired are informers no longer shared (see Retire), running until their users release them
	retired map[*poolEntry]bool
}

type informerKey struct {
	gvr      schema.GroupVersionResource
	selector string
	// keep is what the informer keeps of each object (projection.Fields.String; "" or "*": all)
	keep string
	// slot is the slot of the UID hash the informer holds (sharding), or wholeSlot
	slot       int
	serverSide bool
}

type poolEntry struct {
	informer cache.SharedIndexInformer
	stop     context.CancelFunc
	refs     int
	// lastErr is the informer's last list or watch error (a *watchError), kept to explain a
	// cache that does not sync: a forbidden resource, say
	lastErr atomic.Value
}

type watchError struct{ err error }

// NewPool returns a pool whose informers run until ctx is done or they are released. They list
// and watch through lister when it is not nil, else through client.
func NewPool(ctx context.Context, client dynamic.Interface, lister *compact.Client) *Pool {
	return &Pool{ctx: ctx, client: client, compact: lister, maxKept: compact.DefaultMaxKeptBytes,
		entries: map[informerKey]*poolEntry{}, retired: map[*poolEntry]bool{}}
}

// KeepAtMost sets the size above which the caches keep an object without its body, read from the
// API server when a sync reads it (compact.Omit); before the first informer starts.
func (p *Pool) KeepAtMost(bytes int) {
	if bytes > 0 {
		p.maxKept = bytes
	}
}

// keepAtMost is the informers' transform that keeps of each object what keep keeps (package
// projection), the objects still larger than the pool's cap without their body, and the others'
// bodies as the objects alike hold them (compact.Object.Shared: once for a template's children).
func (p *Pool) keepAtMost(gvr schema.GroupVersionResource, keep *projection.Fields) cache.TransformFunc {
	f := &fetcher{client: p.client, gvr: gvr} // one per informer, not one per object
	return func(obj any) (any, error) {
		o, ok := obj.(*compact.Object)
		if !ok {
			return obj, nil
		}
		o, err := o.Project(keep)
		if err != nil {
			return nil, err
		}
		if o.Larger(p.maxKept) {
			return o.Omit(f), nil
		}
		return o.Shared(), nil
	}
}

// fetcher reads the objects of a resource, as the runtime.
type fetcher struct {
	client dynamic.Interface
	gvr    schema.GroupVersionResource
}

func (f *fetcher) Fetch(ctx context.Context, namespace, name string) (*unstructured.Unstructured, error) {
	return f.client.Resource(f.gvr).Namespace(namespace).Get(ctx, name, metav1.GetOptions{})
}

// Indexers returns the index functions of the names.
func Indexers(names []string) cache.Indexers {
	out := cache.Indexers{}
	for _, n := range names {
		out[n] = indexFuncs[n]
	}
	return out
}

// addIndexes adds to a running informer the indexes of names it does not keep yet (existing
// objects are indexed at once); the caller holds the pool's lock.
func addIndexes(inf cache.SharedIndexInformer, names []string) {
	have := inf.GetIndexer().GetIndexers()
	var missing []string
	for _, n := range names {
		if _, ok := have[n]; !ok {
			missing = append(missing, n)
		}
	}
	if len(missing) == 0 {
		return
	}
	if err := inf.AddIndexers(Indexers(missing)); err != nil {
		utilruntime.HandleError(fmt.Errorf("index a shared informer by %v: %w", missing, err))
	}
}

// newInformer returns an informer of the objects of a resource that match a label selector (and
// hash into a slot), with the indexes of names, keeping what keep keeps of each.
func (p *Pool) newInformer(k informerKey, keep *projection.Fields, names []string) cache.SharedIndexInformer {
	gvr, selector := k.gvr, k.selector
	if p.compact != nil {
		lw := p.compact.ListWatch(gvr, selector)
		if k.slot != wholeSlot {
			lw = p.compact.ShardedListWatch(gvr, selector, hashslot.Range{From: k.slot, To: k.slot + 1}, k.serverSide)
		}
		inf := cache.NewSharedIndexInformerWithOptions(lw, &compact.Object{},
			cache.SharedIndexInformerOptions{Indexers: Indexers(names), ObjectDescription: gvr.String()})
		_ = inf.SetTransform(p.keepAtMost(gvr, keep)) // fails only once started
		return inf
	}
	// without a compact client (tests), a slot's informer holds every object of the resource
	tweak := func(o *metav1.ListOptions) { o.LabelSelector = selector }
	inf := dynamicinformer.NewFilteredDynamicInformer(p.client, gvr, metav1.NamespaceAll, 0, Indexers(names), tweak).Informer()
	_ = inf.SetTransform(slimKeeping(keep))
	return inf
}

// Acquire returns the informer of a resource, filtered by a label selector ("" for all objects),
// starting it if needed, indexed by indexes (ByUID, ByParentUID, cache.NamespaceIndex) besides
// what its other users asked. Call release when done with it.
func (p *Pool) Acquire(gvr schema.GroupVersionResource, selector string, indexes ...string) (inf cache.SharedIndexInformer, release func()) {
	return p.AcquireKeeping(gvr, selector, nil, indexes...)
}

// AcquireKeeping is Acquire of an informer that keeps of each object only what keep keeps
// (package projection; nil: all of it). Informers keeping different fields of the same objects
// are different informers.
func (p *Pool) AcquireKeeping(gvr schema.GroupVersionResource, selector string, keep *projection.Fields, indexes ...string) (inf cache.SharedIndexInformer, release func()) {
	return p.acquire(informerKey{gvr: gvr, selector: selector, keep: keepKey(keep), slot: wholeSlot}, keep, indexes)
}

// keepKey keys the informers by what they keep.
func keepKey(keep *projection.Fields) string {
	if keep.IsWhole() {
		return ""
	}
	return keep.String()
}

// AcquireSlot returns the informer of the objects of a resource, filtered by a label selector,
// whose UIDs hash into one slot (package shard): selected by the API server when serverSide,
// else dropped as they arrive. Call release when done with it.
func (p *Pool) AcquireSlot(gvr schema.GroupVersionResource, selector string, slot int, serverSide bool, indexes ...string) (inf cache.SharedIndexInformer, release func()) {
	return p.acquire(informerKey{gvr: gvr, selector: selector, slot: slot, serverSide: serverSide}, nil, indexes)
}

func (p *Pool) acquire(k informerKey, keep *projection.Fields, indexes []string) (inf cache.SharedIndexInformer, release func()) {
	p.mu.Lock()
	defer p.mu.Unlock()
	e, ok := p.entries[k]
	if ok {
		addIndexes(e.informer, indexes)
	} else {
		inf := p.newInformer(k, keep, indexes)
		ctx, stop := context.WithCancel(p.ctx)
		e = &poolEntry{informer: inf, stop: stop}
		_ = inf.SetWatchErrorHandlerWithContext(func(ctx context.Context, r *cache.Reflector, err error) {
			e.lastErr.Store(&watchError{err})
			cache.DefaultWatchErrorHandler(ctx, r, err)
		})
		p.entries[k] = e
		go inf.RunWithContext(ctx)
	}
	e.refs++
	var once sync.Once
	return e.informer, func() { once.Do(func() { p.release(k, e) }) }
}

// Warm starts, ahead of a controller, the informer of the parents it will acquire for a policy
// (the resource of its parents, which it selects with no label selector). Their cache then lists
// while the policy's expressions compile. Call release once the controller holds its own. The
// children's informers are not warmed: what they keep of each child is known once the policy
// has compiled (package projection).
func (p *Pool) Warm(parent schema.GroupVersionResource) (release func()) {
	_, release = p.Acquire(parent, "", ByUID)
	return release
}

func (p *Pool) release(k informerKey, e *poolEntry) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if e.refs--; e.refs > 0 {
		return
	}
	e.stop()
	delete(p.retired, e)
	if p.entries[k] == e {
		delete(p.entries, k)
	}
}

// WatchError returns the last list or watch error of an informer of the pool, or nil.
func (p *Pool) WatchError(inf cache.SharedIndexInformer) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	for e := range p.all() {
		if e.informer == inf {
			if we, ok := e.lastErr.Load().(*watchError); ok {
				return we.err
			}
			return nil
		}
	}
	return nil
}

// all yields every running informer's entry, shared or retired.
func (p *Pool) all() func(func(*poolEntry) bool) {
	return func(yield func(*poolEntry) bool) {
		for _, e := range p.entries {
			if !yield(e) {
				return
			}
		}
		for e := range p.retired {
			if !yield(e) {
				return
			}
		}
	}
}

// Retire stops sharing the informers of the resources that match: the next Acquire starts a new
// one, which lists afresh, while the current users keep theirs until they release it. After a
// CRD's schema changes, an informer's cache may hold objects read with the old schema (the API
// server prunes fields it did not know), and a watch opened before the change may go on doing so.
func (p *Pool) Retire(match func(schema.GroupVersionResource) bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for k, e := range p.entries {
		if match(k.gvr) {
			delete(p.entries, k)
			p.retired[e] = true
		}
	}
}

// Len returns the number of running informers.
func (p *Pool) Len() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.entries) + len(p.retired)
}

// slimKeeping drops what the runtime never reads from an object before it enters a dynamic
// informer's cache (compact.Slim), and what keep does not keep (projection.Map).
func slimKeeping(keep *projection.Fields) cache.TransformFunc {
	return func(obj any) (any, error) {
		if u, ok := obj.(*unstructured.Unstructured); ok {
			u = compact.Slim(u)
			return &unstructured.Unstructured{Object: projection.Map(u.Object, keep)}, nil
		}
		return obj, nil
	}
}
