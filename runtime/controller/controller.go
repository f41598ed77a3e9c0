package controller

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"runtime/debug"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/events"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"metacel.dev/metacel/runtime/apply"
	"metacel.dev/metacel/runtime/contract"
	"metacel.dev/metacel/runtime/informers"
	"metacel.dev/metacel/runtime/kinds"
	"metacel.dev/metacel/runtime/ledger"
	"metacel.dev/metacel/runtime/policy"
)

// Deps are what every controller shares.
type Deps struct {
	Pool *informers.Pool
	// Ledger keeps what the controller must know across restarts (nil: off)
	Ledger *ledger.Ledger
	Writer *apply.Writer
	// ReservedNamespace is the namespace of the runtime's own records (its policies, rollout
	// records, memos, ledger): no child is ever written there ("": none)
	ReservedNamespace string
	Mapper            kinds.Mapper
	Recorder          events.EventRecorder
	Metrics           *Metrics
	Clock             clock.Clock
	// OnSync, when set, is told of every sync of a parent this controller holds, with when it
	// began and ended (tests record them, to check that no two replicas sync one parent at once)
	OnSync func(policy, key string, start, end time.Time)
	// Pace bounds the bookkeeping patches of all controllers (nil: unbounded)
	Pace *BookkeepingPace
	// ActAs, when set, gives the identity each policy acts as (its ServiceAccount): its writes go
	// through the identity's Writer instead of Writer, its reads are checked (access.go)
	ActAs func(*policy.Compiled) (Identity, error)
}

// Controller reconciles the parents of one policy.
type Controller struct {
	policy *policy.Compiled
	deps   Deps
	queue  workqueue.TypedRateLimitingInterface[string]

	// caches hold the parents and children (caches.go)
	caches  caches
	related map[string]cache.SharedIndexInformer // by GroupVersionResource string
	// sharding, when not nil, makes the controller hold the parents of some slots only
	// (slots.go); syncing is held (read) by each sync, so that a replica letting go of
	// slots can wait for the syncs under way
	sharding *sharding
	syncing  sync.RWMutex
	// namespaces is the namespaces' informer, when the policy's confinement asks for consent
	namespaces cache.SharedIndexInformer
	// delivered are done once the related objects' and namespaces' informers have synced and
	// delivered their events so far to the controller's handlers
	delivered []cache.DoneChecker
	// relIndex is what each parent read of the related objects, looked up by related object to
	// route its events (related.go): not in parentStates, which is looked up by parent
	relIndex *relatedIndex
	// parentStates is what the controller remembers of each parent between its syncs
	// (parentstate.go)
	parentStates parentStates
	// writer writes the children (childwriter.go), cleanup cleans up after them (finalize.go),
	// reporter reports on the parents (status.go)
	writer   *childWriter
	cleanup  *cleanup
	reporter *reporter

	cleanups []func()
	// previous is the version of the policy this controller replaces (Options.Replaces; TakeAll
	// changes it), or nil
	previous *policy.Compiled
	// selector selects the parents (the policy's labelSelector, or everything)
	selector labels.Selector
	// share is the parents the controller syncs, when not all (share.go)
	share share
	// draining is set when the policy was removed: Recreates under way (parentState.recreating)
	// complete, no new one starts (recreatesunderway.go); drainNews wakes the wait for them
	draining  atomic.Bool
	drainNews chan struct{}
	// opts are the controller's options, as New was given them
	opts Options
	// access checks the policy's reads as the identity it acts as (access.go)
	access *access
}

// Options configure one controller, once, in New.
type Options struct {
	// Replaces is the version of the policy the controller replaces (nil: none): its entries say
	// the deletion policy of a child that does not record its own, and the children of resources
	// it listed and this version does not are removed when the controller starts
	Replaces *policy.Compiled
	// Share, when set, is the parents the controller syncs (a rollout's share); SetShare changes it
	Share func(types.UID) bool
	// Sharded makes the controller sync the parents of the slots FollowSlots gives it, watched
	// through the API server's shard selector when ServerSideShards, else filtered as objects
	// arrive
	Sharded, ServerSideShards bool
	// Version names the version of the policy in the controller's log lines: during a rollout,
	// two versions of one policy run side by side
	Version string
	// OnNotSynced, when set, is told why the caches have not synced yet (see waitForCaches)
	OnNotSynced func(msg string)
}

// New prepares the controller of a policy, configured by opts; Run starts it.
func New(p *policy.Compiled, deps Deps, opts Options) *Controller {
	c := &Controller{
		policy: p,
		deps:   deps,
		queue: workqueue.NewTypedRateLimitingQueueWithConfig(workqueue.DefaultTypedControllerRateLimiter[string](),
			workqueue.TypedRateLimitingQueueConfig[string]{Name: p.Name()}),
		caches:    caches{policy: p.Name(), children: map[string]*childCache{}},
		related:   map[string]cache.SharedIndexInformer{},
		relIndex:  newRelatedIndex(),
		drainNews: make(chan struct{}, 1),
		previous:  opts.Replaces,
		opts:      opts,
	}
	c.access = actAs(p, &c.deps)
	if opts.Share != nil {
		c.SetShare(opts.Share)
	}
	if opts.Sharded {
		c.shardedBy(opts.ServerSideShards)
	}
	c.writer = &childWriter{policy: p.Name(), resources: p.ChildResources, deps: &c.deps, states: &c.parentStates,
		caches: &c.caches, draining: &c.draining}
	c.reporter = &reporter{policy: p, deps: &c.deps, states: &c.parentStates}
	c.cleanup = &cleanup{policy: p, previous: func() *policy.Compiled { return c.previous }, deps: &c.deps, writer: c.writer,
		children: func(ctx context.Context, uid types.UID) map[string][]*unstructured.Unstructured {
			return observedChildren(ctx, c.caches.cachedChildren(uid))
		},
		namespaceLabels: c.namespaceLabels, caches: &c.caches, share: &c.share, selector: &c.selector,
		requeueAfter: func(key string, d time.Duration) { c.queue.AddAfter(key, d) }}
	return c
}

// Name is the policy's name.
func (c *Controller) Name() string { return c.policy.Name() }

// Run watches (unless Watch was called), waits for the caches, calls synced, and reconciles with
// workers until ctx is done; then it stops its workers, waits for them, and releases its informers.
func (c *Controller) Run(ctx context.Context, workers int, synced func()) error {
	logger := klog.FromContext(ctx).WithValues("controller", c.Name())
	if c.opts.Version != "" {
		logger = logger.WithValues("version", c.opts.Version)
	}
	ctx = klog.NewContext(ctx, logger)
	defer c.release()
	if c.access.err != nil {
		return c.access.err
	}
	if c.caches.parents == nil {
		if err := c.Watch(); err != nil {
			return err
		}
	}
	if !c.waitForCaches(ctx) {
		return nil // stopped before it started, e.g. swapped by a newer version
	}
	logger.Info("Started controller", "parent", c.policy.Parent.GVR.String(), "workers", workers)
	if synced != nil {
		// first, as it stops the version this one replaces: that one would otherwise create again
		// the children of a dropped resource that pruneDropped deletes (they are its children),
		// and give back the finalizer letGoOfParentsOutOfSelector removes
		synced()
	}
	if c.share.whole() {
		c.cleanup.pruneDropped(ctx)
		c.cleanup.letGoOfParentsOutOfSelector(ctx)
	}
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() { wait.UntilWithContext(ctx, c.runWorker, time.Second) })
	}
	if period := c.policy.ResyncPeriod; period > 0 {
		wg.Go(func() { c.resyncEvery(ctx, period) })
	}
	<-ctx.Done()
	c.queue.ShutDown()
	wg.Wait()
	logger.Info("Stopped controller")
	return nil
}

// resyncEvery re-syncs every parent from the cache each period (jittered by up to 10 %), the
// shared informers never re-list, until ctx is done. The first comes a period after the start,
// not at it: the informers' lists have queued every parent, and a second enqueue of all while
// the workers drain the first would sync again each parent already done (up to 1.7 syncs per
// parent in a restart over 10,000).
func (c *Controller) resyncEvery(ctx context.Context, period time.Duration) {
	for {
		t := c.deps.Clock.NewTimer(wait.Jitter(period, 0.1))
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C():
		}
		c.resync(ctx)
	}
}

// resync re-syncs every parent from the cache (the shared informers never re-list), and finishes
// the cleanups that the objects say are left: children of dropped resources, parents out of the
// labelSelector that still carry the finalizer.
func (c *Controller) resync(ctx context.Context) {
	c.enqueueAll(c.queue.Add)
	if c.share.whole() {
		c.cleanup.pruneDroppedAgain(ctx)
		c.cleanup.letGoOfParentsOutOfSelector(ctx)
	}
}

// informers returns the controller's informers by resource (and slot, with sharding).
func (c *Controller) informers() map[string]cache.SharedIndexInformer {
	out := map[string]cache.SharedIndexInformer{}
	for _, rc := range c.caches.all() {
		for i, inf := range rc.Informers() {
			name := rc.GVR().String()
			if rc.Sharded() {
				name = fmt.Sprintf("%s (slot informer %d)", name, i)
			}
			out[name] = inf
		}
	}
	maps.Copy(out, c.related)
	if c.namespaces != nil {
		out[namespacesGVR.String()] = c.namespaces
	}
	return out
}

// release removes the event handlers and releases the informers.
func (c *Controller) release() {
	c.queue.ShutDown()
	for i := len(c.cleanups) - 1; i >= 0; i-- {
		c.cleanups[i]()
	}
	c.cleanups = nil
	if c.sharding != nil {
		c.sharding.mu.Lock()
		defer c.sharding.mu.Unlock()
		c.sharding.stopped = true
	}
	c.caches.releaseAll()
	c.drainQueue()
}

// drainQueue empties a queue that was shut down: its successor (the same policy's next version)
// reports under the same name, and workqueue_depth would keep what this one left.
func (c *Controller) drainQueue() {
	for c.queue.Len() > 0 {
		key, _ := c.queue.Get()
		c.queue.Forget(key)
		c.queue.Done(key)
	}
}

// Watch acquires the informers of the parent, child and related resources and routes their
// events to the queue. A reload calls it on the new controller before stopping the old one, so
// that the informers they share keep running (no re-list).
func (c *Controller) Watch() error {
	if err := c.setSelector(); err != nil {
		return err
	}
	selector := ""
	if c.policy.ParentSelector != nil {
		selector = c.selector.String()
	}
	c.caches.watch(c.deps.Pool, c.policy.Parent.GVR, selector, c.parentHandler(), slices.Collect(maps.Keys(c.policy.ChildResources)), c.childHandler(),
		c.sharding != nil, c.sharding != nil && c.sharding.serverSide, c.deps.Clock)
	c.watchRelated()
	return nil
}

// setSelector sets the selector of the parents: the policy's labelSelector, or everything.
func (c *Controller) setSelector() error {
	c.selector = labels.Everything()
	if s := c.policy.ParentSelector; s != nil {
		sel, err := metav1.LabelSelectorAsSelector(s)
		if err != nil {
			return fmt.Errorf("policy %q: parent selector: %w", c.Name(), err)
		}
		c.selector = sel
	}
	return nil
}

func (c *Controller) acquire(gvr schema.GroupVersionResource, selector string, h cache.ResourceEventHandler, indexes ...string) cache.SharedIndexInformer {
	inf, release := c.deps.Pool.Acquire(gvr, selector, indexes...)
	removeAndRelease, delivered := informers.WithHandler(inf, release, h)
	c.cleanups = append(c.cleanups, removeAndRelease)
	c.delivered = append(c.delivered, delivered)
	return inf
}

func (c *Controller) runWorker(ctx context.Context) {
	for c.processNextWorkItem(ctx) {
	}
}

// processNextWorkItem syncs one parent; a retryable failure is requeued with backoff.
func (c *Controller) processNextWorkItem(ctx context.Context) bool {
	key, quit := c.queue.Get()
	if quit {
		return false
	}
	defer c.queue.Done(key)
	if ctx.Err() != nil {
		return false // stopping: leave what is queued (the queue drains on shutdown)
	}
	logger := klog.FromContext(ctx).WithValues("parent", key)
	start := c.deps.Clock.Now()
	c.syncing.RLock()
	err := c.syncRecovering(klog.NewContext(ctx, logger), key)
	c.syncing.RUnlock()
	if ctx.Err() != nil && errors.Is(err, context.Canceled) {
		// the controller stops (a reload swapped it, or shutdown): its successor syncs the parent
		logger.V(2).Info("Sync cancelled: the controller is stopping", "err", err)
		return false
	}
	c.deps.Metrics.observe(c.Name(), start, c.deps.Clock.Now(), err)
	var perm *permanentError
	switch {
	case err == nil:
		c.queue.Forget(key)
	case errors.As(err, &perm):
		c.queue.Forget(key)
		logger.V(2).Info("Sync failed; waiting for an input to change", "err", err)
	case isConflict(err):
		c.queue.AddRateLimited(key)
		logger.V(1).Info("Child conflict; will retry", "err", err)
	case apierrors.ReasonForError(err) == reasonWriteFenced:
		// this replica's Lease may have expired (it stops leading soon, or renews and goes on), or,
		// sharded, the parent's slot is moving to another replica (the next sync skips it)
		c.queue.AddRateLimited(key)
		logger.V(2).Info("Write fenced: this replica may no longer write for the parent; will retry", "err", err)
	default:
		c.queue.AddRateLimited(key)
		logger.Error(err, "Sync failed; will retry")
	}
	return true
}

// syncRecovering syncs a parent; a panic is turned into an error (retried with backoff), so that
// one parent's bug in the runtime or a library stops neither its policy nor the others.
func (c *Controller) syncRecovering(ctx context.Context, key string) (err error) {
	defer func() {
		if r := recover(); r != nil {
			c.deps.Metrics.panicked(c.Name())
			err = fmt.Errorf("panic in the sync of %q (policy %q): %v", key, c.Name(), r)
			klog.FromContext(ctx).Error(err, "Sync panicked; will retry", "stack", string(debug.Stack()))
		}
	}()
	return c.sync(ctx, key)
}

// reasonWriteFenced is the reason of a write that the write fence refused (package operator):
// no error of the sync's own.
const reasonWriteFenced = "WriteFenced"

// permanentError is a failure that retrying the same inputs cannot fix.
type permanentError struct{ err error }

func (e *permanentError) Error() string { return e.err.Error() }
func (e *permanentError) Unwrap() error { return e.err }

// isPermanent classifies an API error: a request the server rejects as invalid, or as larger
// than it can ever store, is rejected again when sent again.
func isPermanent(err error) bool {
	return apierrors.IsInvalid(err) || apierrors.IsBadRequest(err) || isTooLarge(err)
}

// isTooLarge reports whether the API server refused an object for its size: the request body
// limit (413), or etcd's request limit, which comes back as an internal error (500).
func isTooLarge(err error) bool {
	return apierrors.IsRequestEntityTooLargeError(err) ||
		apierrors.IsInternalError(err) && strings.Contains(err.Error(), "request is too large")
}

// enqueueAll asks for a sync of every parent.
func (c *Controller) enqueueAll(add func(string)) {
	for _, key := range c.caches.parents.ListKeys() {
		add(key)
	}
}

func (c *Controller) parentHandler() cache.ResourceEventHandler {
	return cache.ResourceEventHandlerFuncs{
		AddFunc:    c.enqueueObject,
		UpdateFunc: func(_, obj any) { c.enqueueObject(obj) },
		DeleteFunc: func(obj any) {
			if m, err := informers.MetaOf(obj); err == nil && !c.share.has(m.GetUID()) {
				return // the other version's, during a rollout
			}
			c.cleanup.left.note(obj)
			c.enqueueObject(obj)
		},
	}
}

func (c *Controller) enqueueObject(obj any) {
	key, err := cache.DeletionHandlingMetaNamespaceKeyFunc(obj)
	if err != nil {
		utilruntime.HandleError(err)
		return
	}
	c.queue.Add(key)
}

// childHandler routes a child's events to its parent, through its parent-uid label. An update
// routes the old object too: a child whose labels were edited away must bring its parent back.
func (c *Controller) childHandler() cache.ResourceEventHandler {
	// enqueue asks for a sync of a child's parents: at once for a child of the informer's first
	// list, so that every parent is queued before the workers start (once: with the parent's own
	// event), and for a child deleted (news, or the deletion a Recreate waits for); spaced per
	// parent for any other event (childEvents). Spaced, the first list's children came back
	// after their parents' syncs and synced them again: 1,292-2,000 syncs in a restart over
	// 1,000 converged parents.
	enqueue := func(obj any, now bool) {
		m, err := informers.MetaOf(obj)
		if err != nil || contract.ChildPolicy(m.GetLabels()) != c.Name() {
			return
		}
		parents, _ := c.caches.parents.ByIndex(informers.ByUID, m.GetLabels()[contract.LabelParentUID])
		for _, p := range parents {
			key, err := cache.MetaNamespaceKeyFunc(p)
			if err != nil {
				continue
			}
			if d := c.parentStates.childEventDelay(key); now || d == 0 {
				c.queue.Add(key)
			} else {
				c.queue.AddAfter(key, d)
			}
		}
		if now {
			c.wakeDrain()
		}
	}
	return routeHandler(enqueue)
}

// routeHandler calls route with every object an event concerns: an update's old and new; now
// says whether the event is an add of the informer's first list or a deletion.
func routeHandler(route func(obj any, now bool)) cache.ResourceEventHandler {
	return cache.ResourceEventHandlerDetailedFuncs{
		AddFunc: route,
		UpdateFunc: func(old, obj any) {
			route(old, false)
			route(obj, false)
		},
		DeleteFunc: func(obj any) { route(obj, true) },
	}
}

func isConflict(err error) bool {
	var se *syncError
	return errors.As(err, &se) && se.reason == contract.ReasonChildConflict
}
