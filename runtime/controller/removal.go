package controller

import (
	"context"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	"metacel.dev/metacel/runtime/decide"
	"metacel.dev/metacel/runtime/policy"
	"metacel.dev/metacel/runtime/render"
)

// A policy removed while one of its Recreates is under way (the old child deleted, still going:
// a Pod in its grace period on a node) must not leave the parent without its child: nothing
// would create it again. FinishRecreates lets them complete before the controller stops, and
// nothing else: while it waits, a sync takes only the steps that complete a Recreate under way
// (finishes), so no new Recreate starts, nothing is updated or pruned, and a parent without one
// is not synced at all. A child is either replaced or left as it was.
//
// The Recreates under way are those this controller's syncs left waiting for an old child to go
// (recreations, by parent and child), and, when the wait starts, the children of Recreate
// resources the cache shows going while their parent stays (a predecessor's, or one whose sync
// has not run yet).

// recreations are the children whose Recreate is under way, by parent key and child identity.
type recreations struct {
	sync.Mutex
	waiting map[string]map[string]bool
}

// record sets what a parent's sync left waiting: all of it when the sync completed; when it
// failed, what it started is added to what was waiting before (its retry finishes them).
func (r *recreations) record(key string, waiting []string, complete bool) {
	r.Lock()
	defer r.Unlock()
	if complete {
		delete(r.waiting, key)
	}
	for _, id := range waiting {
		r.markLocked(key, id)
	}
}

// mark adds one child to a parent's Recreates under way.
func (r *recreations) mark(key, identity string) {
	r.Lock()
	defer r.Unlock()
	r.markLocked(key, identity)
}

func (r *recreations) markLocked(key, identity string) {
	if r.waiting == nil {
		r.waiting = map[string]map[string]bool{}
	}
	if r.waiting[key] == nil {
		r.waiting[key] = map[string]bool{}
	}
	r.waiting[key][identity] = true
}

// forget drops a parent that is gone.
func (r *recreations) forget(key string) {
	r.Lock()
	defer r.Unlock()
	delete(r.waiting, key)
}

// has reports whether a child's Recreate is under way.
func (r *recreations) has(key, identity string) bool {
	r.Lock()
	defer r.Unlock()
	return r.waiting[key][identity]
}

// hasParent reports whether any Recreate of the parent is under way.
func (r *recreations) hasParent(key string) bool {
	r.Lock()
	defer r.Unlock()
	return len(r.waiting[key]) > 0
}

// count is how many parents have Recreates under way.
func (r *recreations) count() int {
	r.Lock()
	defer r.Unlock()
	return len(r.waiting)
}

// FinishRecreates, for a controller whose policy was removed, waits until the Recreates under
// way have completed (the old children gone, the new ones created by the syncs their deletions
// cause), then until the syncs queued are done; at most until ctx is done or timeout. The
// controller must be stopped after it (the queue takes no more work).
func (c *Controller) FinishRecreates(ctx context.Context, timeout time.Duration) {
	c.draining.Store(true)
	c.waitForSyncsUnderWay() // they record the Recreates they start
	c.markRecreatesGoing()
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	logger := klog.FromContext(ctx).WithValues("controller", c.Name())
	for n := c.recreations.count(); n > 0; n = c.recreations.count() {
		logger.V(2).Info("Policy removed: waiting for its Recreates under way", "parents", n)
		select {
		case <-ctx.Done():
			logger.Info("Policy removed: stopping with Recreates under way; their parents keep no child until a policy manages them again", "parents", n, "timeout", timeout)
			return
		case <-c.drainNews:
		}
	}
	drained := make(chan struct{})
	go func() { c.queue.ShutDownWithDrain(); close(drained) }()
	select {
	case <-drained:
	case <-ctx.Done():
	}
}

// waitForSyncsUnderWay returns once the syncs under way are done (each holds syncing's read lock).
func (c *Controller) waitForSyncsUnderWay() {
	c.syncing.Lock()
	defer c.syncing.Unlock()
}

// markRecreatesGoing marks as under way the cached children of Recreate resources that are
// being deleted while their parent stays, and queues their parents.
func (c *Controller) markRecreatesGoing() {
	for gvr, res := range c.policy.ChildResources {
		if res.Method != policy.Recreate {
			continue
		}
		for _, obj := range c.children[gvr.String()].List() {
			m, err := metaOf(obj)
			if err != nil || m.GetDeletionTimestamp() == nil || m.GetLabels()[render.LabelPolicy] != c.Name() {
				continue
			}
			if key, ok := c.stayingParent(m.GetLabels()[render.LabelParentUID]); ok {
				id := render.Identity(&unstructured.Unstructured{Object: map[string]any{
					"apiVersion": res.GVK().GroupVersion().String(), "kind": res.Kind,
					"metadata": map[string]any{"namespace": m.GetNamespace(), "name": m.GetName()}}})
				c.recreations.mark(key, id)
				c.queue.Add(key)
			}
		}
	}
}

// stayingParent returns the key of the parent of a UID when it is cached and not being deleted.
func (c *Controller) stayingParent(uid string) (string, bool) {
	parents, _ := c.parents.ByIndex(byUID, uid)
	for _, p := range parents {
		if m, err := metaOf(p); err == nil && m.GetDeletionTimestamp() == nil {
			key, err := cache.MetaNamespaceKeyFunc(p)
			return key, err == nil
		}
	}
	return "", false
}

// wakeDrain wakes FinishRecreates up, when it waits, after a child's deletion or a sync.
func (c *Controller) wakeDrain() {
	if !c.draining.Load() {
		return
	}
	select {
	case c.drainNews <- struct{}{}:
	default:
	}
}

// finishes reports whether a sync takes a step: always, but for a removed policy's controller,
// which only completes the Recreates under way (their children awaited, created, or, when the
// cache does not show them going yet, deleted again: the same deletion).
func (c *Controller) finishes(parent *unstructured.Unstructured, s decide.Step) bool {
	if !c.draining.Load() {
		return true
	}
	switch s.Action {
	case decide.Await, decide.Create, decide.Recreate:
		return c.recreations.has(parentKey(parent), render.Identity(s.Child.Object))
	}
	return false
}
