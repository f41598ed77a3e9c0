package controller

import (
	"context"
	"errors"
	"fmt"
	"runtime/debug"
	"sync"
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
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"

	"metacel.dev/metacel/runtime/contract"
	"metacel.dev/metacel/runtime/decide"
	"metacel.dev/metacel/runtime/hashslot"
	"metacel.dev/metacel/runtime/informers"
	"metacel.dev/metacel/runtime/policy"
	"metacel.dev/metacel/runtime/priorityqueue"
)

// Controller reconciles the parents of one policy: it is the loop (the queue, its workers, the
// informers' event handlers), configured once by New. What it runs lives beside it, each a type
// of its own that knows nothing of the loop: the caches (caches.go, slots.go), each sync
// (syncer, sync.go), the child writer (childwriter.go), cleanup (finalize.go), the reports on
// parents (status.go), the related objects (related.go), the per-parent memory
// (parentstate.go), the share it syncs (share.go) and the Recreates a removal completes
// (recreatesunderway.go).
type Controller struct {
	policy *policy.Compiled
	deps   Deps
	opts   Options
	queue  *priorityqueue.Workqueue[string]

	// caches hold the parents and children, related the related objects and namespaces
	caches  caches
	related *relatedWatch
	// sharding, when not nil, makes the controller hold the parents of some slots only
	// (slots.go); syncing is held (read) by each sync, so that a replica letting go of
	// slots, or a removal, can wait for the syncs under way
	sharding *sharding
	syncing  sync.RWMutex
	// share is the parents the controller syncs, when not all (share.go)
	share share
	// states is what the controller remembers of each parent between its syncs (parentstate.go)
	states parentStates
	// syncer syncs one parent (sync.go), cleanup cleans up after the children (finalize.go),
	// drain completes the Recreates under way of a removed policy (recreatesunderway.go)
	syncer  *syncer
	cleanup *cleanup
	drain   *drain
	// selector selects the parents (the policy's labelSelector, or everything), set by Watch
	selector labels.Selector
	// cleanups release the informers Watch acquired; delivered are done once the informers
	// acquired besides the caches' have synced and delivered their events so far
	cleanups  []func()
	delivered []cache.DoneChecker
	// access checks the policy's reads as the identity it acts as (access.go)
	access *access
	// events are the events no sync has handled yet, for metacel_sync_event_latency_seconds
	events pendingEvents
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

// retryLimiter spaces the retries of a parent whose sync failed: 5 ms after its first failure,
// doubling up to 1000 s, per parent, as client-go's default; but without the default's bucket
// shared by every parent (10 per second), which after an outage that failed 100,000 parents at
// once spaced their retries over 2 h 46 min. What the API server receives is bounded by the
// client's own rate limit (--kube-api-qps).
func retryLimiter() workqueue.TypedRateLimiter[string] {
	return workqueue.NewTypedItemExponentialFailureRateLimiter[string](5*time.Millisecond, 1000*time.Second)
}

// New prepares the controller of a policy, configured by opts; Run starts it.
func New(p *policy.Compiled, deps Deps, opts Options) *Controller {
	c := &Controller{
		policy: p,
		deps:   deps,
		opts:   opts,
		queue:  priorityqueue.NewWorkqueue(p.Name(), retryLimiter()),
		caches: caches{policy: p.Name(), children: map[string]*childCache{}},
	}
	c.access = actAs(p, &c.deps)
	c.related = newRelatedWatch(p, c.access, func(key string) {
		c.noteEvent(key, eventOfRelated)
		c.queue.Add(key)
	}, c.resyncAll)
	if opts.Share != nil {
		c.SetShare(opts.Share)
	}
	if opts.Sharded {
		c.sharding = newSharding(opts.ServerSideShards, &c.caches, &c.share, &c.syncing, c.deps.Pool, p.Parent.GVR, c.resyncAll)
	}
	c.drain = &drain{policy: p, caches: &c.caches, states: &c.states, syncing: &c.syncing, enqueue: c.queue.Add, news: make(chan struct{}, 1)}
	writer := &childWriter{policy: p.Name(), resources: p.ChildResources, deps: &c.deps, states: &c.states,
		caches: &c.caches, draining: &c.drain.draining}
	c.syncer = &syncer{policy: p, deps: &c.deps, caches: &c.caches, share: &c.share, states: &c.states, related: c.related,
		access: c.access, writer: writer, drain: c.drain, requeueAfter: c.queue.AddAfter,
		reporter: &reporter{policy: p, deps: &c.deps, states: &c.states}}
	c.syncer.previous.Store(opts.Replaces)
	c.cleanup = &cleanup{policy: p, previous: c.syncer.previous.Load, deps: &c.deps, writer: writer, reporter: c.syncer.reporter, ordered: decide.Ordered(p),
		children: func(ctx context.Context, uid types.UID) map[string][]*unstructured.Unstructured {
			return observedChildren(ctx, c.caches.cachedChildren(uid))
		},
		namespaceLabels: c.related.namespaceLabels, caches: &c.caches, share: &c.share, selector: &c.selector,
		requeueAfter: c.queue.AddAfter}
	c.syncer.cleanup = c.cleanup
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
	wg.Go(func() { wait.UntilWithContext(ctx, c.forgetOldCreates, sweepEvery) })
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
	c.enqueueAll()
	if c.share.whole() {
		c.cleanup.pruneDroppedAgain(ctx)
		c.cleanup.letGoOfParentsOutOfSelector(ctx)
	}
}

// release removes the event handlers and releases the informers.
func (c *Controller) release() {
	c.queue.ShutDown()
	for i := len(c.cleanups) - 1; i >= 0; i-- {
		c.cleanups[i]()
	}
	c.cleanups = nil
	if c.sharding != nil {
		c.sharding.stop()
	}
	c.caches.releaseAll()
	drainQueue(c.queue)
}

// drainQueue empties a queue that was shut down: its successor (the same policy's next version)
// reports under the same name, and workqueue_depth would keep what this one left.
func drainQueue(q workqueue.TypedRateLimitingInterface[string]) {
	for q.Len() > 0 {
		key, _ := q.Get()
		q.Forget(key)
		q.Done(key)
	}
}

// Watch acquires the informers of the parent, child and related resources and routes their
// events to the queue. A reload calls it on the new controller before stopping the old one, so
// that the informers they share keep running (no re-list).
func (c *Controller) Watch() error {
	sel, err := parentSelector(c.policy)
	if err != nil {
		return err
	}
	c.selector = sel
	selector := ""
	if c.policy.ParentSelector != nil {
		selector = c.selector.String()
	}
	c.caches.watch(c.deps.Pool, c.policy.Parent.GVR, selector, c.parentHandler(), c.policy.ChildResources, c.childHandler(),
		c.sharding != nil, c.sharding != nil && c.sharding.serverSide, c.deps.Clock)
	c.related.watch(c.acquire)
	return nil
}

// parentSelector is the selector of a policy's parents: its labelSelector, or everything.
func parentSelector(p *policy.Compiled) (labels.Selector, error) {
	s := p.ParentSelector
	if s == nil {
		return labels.Everything(), nil
	}
	sel, err := metav1.LabelSelectorAsSelector(s)
	if err != nil {
		return nil, fmt.Errorf("policy %q: parent selector: %w", p.Name(), err)
	}
	return sel, nil
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
	c.deps.Metrics.observeEventLatency(c.Name(), c.events.take(key), start)
	c.syncing.RLock()
	err := c.syncRecovering(klog.NewContext(ctx, logger), key)
	c.syncing.RUnlock()
	if ctx.Err() != nil && errors.Is(err, context.Canceled) {
		// the controller stops (a reload swapped it, or shutdown): its successor syncs the parent
		logger.V(2).Info("Sync cancelled: the controller is stopping", "err", err)
		return false
	}
	c.deps.Metrics.observe(c.Name(), start, c.deps.Clock.Now(), err)
	switch {
	case err == nil:
		c.queue.Forget(key)
	case isTerminal(err):
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
	return c.syncer.sync(ctx, key)
}

// enqueueAll asks for a sync of every parent, at low priority: after the syncs something that
// changed asks for (an edit waits for no resync).
func (c *Controller) enqueueAll() {
	for _, key := range c.caches.parents.ListKeys() {
		c.queue.AddLow(key)
	}
}

// resyncAll asks for a sync of every parent with its inputs forgotten: something the
// fingerprints do not cover changed (the share, the slots held, a namespace's consent).
func (c *Controller) resyncAll() {
	c.states.resetInputs()
	if c.caches.parents != nil {
		c.enqueueAll()
	}
}

func (c *Controller) parentHandler() cache.ResourceEventHandler {
	return cache.ResourceEventHandlerDetailedFuncs{
		AddFunc: func(obj any, _ bool) {
			c.states.noteParentEvent()
			c.enqueueObject(obj, false)
		},
		UpdateFunc: func(old, obj any) {
			lookAgain := unchanged(old, obj)
			if !lookAgain {
				c.states.noteParentEvent()
			}
			c.enqueueObject(obj, lookAgain)
		},
		DeleteFunc: func(obj any) {
			c.states.noteParentEvent()
			if m, err := informers.MetaOf(obj); err == nil && !c.share.has(m.GetUID()) {
				return // the other version's, during a rollout
			}
			c.cleanup.left.note(obj)
			c.enqueueObject(obj, false)
		},
	}
}

// enqueueObject asks for a sync of a parent whose event came: at low priority when the event
// only looks again (a relist's unchanged parent), as a resync, else at high. The informer's first
// list is high: at a reload, a new version's controller re-renders every parent from it, and at
// low its own writes' events went first (every Pod of 50 relabelled in 4.8 s against 3.4 s).
func (c *Controller) enqueueObject(obj any, lookAgain bool) {
	key, err := cache.DeletionHandlingMetaNamespaceKeyFunc(obj)
	if err != nil {
		utilruntime.HandleError(err)
		return
	}
	c.noteEvent(key, eventOfParent)
	if lookAgain {
		c.queue.AddLow(key)
		return
	}
	c.queue.Add(key)
}

// noteEvent remembers that an event of source asks for a sync of the parent of key, when the
// sync's latency is measured (metrics.go).
func (c *Controller) noteEvent(key, source string) {
	if c.deps.Metrics != nil {
		c.events.note(key, source, c.deps.Clock.Now())
	}
}

// childHandler routes a child's events to its parent, through its parent-uid label. An update
// routes the old object too: a child whose labels were edited away must bring its parent back.
func (c *Controller) childHandler() cache.ResourceEventHandler {
	// enqueue asks for a sync of a child's parents: at once for a child of the informer's first
	// list, so that every parent is queued before the workers start (once: with the parent's own
	// event), and for a child deleted (news, or the deletion a Recreate waits for); at low
	// priority for a relist's unchanged child; spaced per parent for any other event
	// (childEvents). Spaced, the first list's children came back after their parents' syncs and
	// synced them again: 1,292-2,000 syncs in a restart over 1,000 converged parents.
	enqueue := func(obj any, why routing) {
		m, err := informers.MetaOf(obj)
		if err != nil || contract.ChildPolicy(informers.LabelsOf(m)) != c.Name() {
			return
		}
		parents, _ := c.caches.parents.ByIndex(informers.ByUID, informers.LabelsOf(m).Get(contract.LabelParentUID))
		for _, p := range parents {
			key, err := cache.MetaNamespaceKeyFunc(p)
			if err != nil {
				continue
			}
			c.noteEvent(key, eventOfChild)
			switch d := c.states.childEventDelay(key); {
			case why == unchangedInRelist:
				c.queue.AddLow(key)
			case why == inFirstList || why == deleted || d == 0:
				c.queue.Add(key)
			default:
				c.queue.AddAfter(key, d)
			}
		}
		if why == inFirstList || why == deleted {
			c.drain.wake()
		}
	}
	return routeHandler(enqueue)
}

// SetShare makes the controller sync only the parents for which holds is true (nil: every
// parent), from now on: every parent is queued again, so that those it gained are synced at
// once. Called before Run, the controller starts on that share, and skips the cleanups that need
// every parent until TakeAll.
func (c *Controller) SetShare(holds func(types.UID) bool) {
	c.share.set(holds)
	c.resyncAll()
}

// TakeAll makes the controller sync every parent again, after a share; previous is the other
// version that held the rest, whose children of resources this version does not list are removed
// now, as when a controller replaces a version (Options.Replaces).
func (c *Controller) TakeAll(ctx context.Context, previous *policy.Compiled) {
	ctx = klog.NewContext(ctx, klog.FromContext(ctx).WithValues("controller", c.Name()))
	c.syncer.previous.Store(previous)
	c.SetShare(nil)
	c.cleanup.pruneDropped(ctx)
	c.cleanup.letGoOfParentsOutOfSelector(ctx)
}

// FollowSlots makes a sharded controller sync the parents of the slots held() gives (slots.go);
// a controller that is not sharded, or has stopped, follows nothing.
func (c *Controller) FollowSlots(ctx context.Context, held func() hashslot.Set) {
	if c.sharding != nil {
		c.sharding.follow(ctx, held)
	}
}

// FinishRecreates, for a controller whose policy was removed, waits until the Recreates under
// way have completed, then until the syncs queued are done; at most until ctx is done or timeout
// (recreatesunderway.go). The controller must be stopped after it (the queue takes no more work).
func (c *Controller) FinishRecreates(ctx context.Context, timeout time.Duration) {
	ctx = klog.NewContext(ctx, klog.FromContext(ctx).WithValues("controller", c.Name()))
	c.drain.finish(ctx, timeout, c.queue.ShutDownWithDrain)
}

// Parents are the parents the controller holds, as its syncs found them (share.go).
func (c *Controller) Parents() Parents {
	return Parents{caches: &c.caches, share: &c.share, states: &c.states}
}

// Memory is what the controller remembers of its parents' last successful syncs, to save as a
// memo and recall after a restart (memo.go).
func (c *Controller) Memory() Memory {
	return Memory{policy: c.policy, share: &c.share, states: &c.states}
}

// waitForCaches waits until the controller's informers have synced (cachesync.go), and reports
// false if ctx ends first.
func (c *Controller) waitForCaches(ctx context.Context) bool {
	informers := func() map[string]cache.SharedIndexInformer { return informersByName(&c.caches, c.related) }
	checks := func() []cache.DoneChecker { return doneCheckers(&c.caches, c.delivered) }
	return waitForCaches(ctx, c.Name(), checks, informers, c.deps.Pool, c.opts.OnNotSynced)
}
