package controller

import (
	"context"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/klog/v2"

	"metacel.dev/metacel/runtime/policy"
	"metacel.dev/metacel/runtime/render"
)

// A policy removed while one of its Recreates is under way (the old child deleted, still going:
// a Pod in its grace period on a node) must not leave the parent without its child: nothing
// would create it again. FinishRecreates lets them complete before the controller stops; it
// starts no new one (recreate), so a child is either replaced or left as it was. The Recreates
// under way are those this controller's syncs left waiting for an old child to go (kept per
// parent: recreations), and the children of Recreate resources the cache shows going while their
// parent stays (a predecessor's, during a reload).

// recreations are the parents whose last sync left a Recreate waiting for its old child to go.
type recreations struct {
	sync.Mutex
	waiting map[string]bool
}

// set records whether a parent's sync left a Recreate waiting.
func (r *recreations) set(key string, waiting bool) {
	r.Lock()
	defer r.Unlock()
	if r.waiting == nil {
		r.waiting = map[string]bool{}
	}
	if waiting {
		r.waiting[key] = true
	} else {
		delete(r.waiting, key)
	}
}

func (r *recreations) has(key string) bool {
	r.Lock()
	defer r.Unlock()
	return r.waiting[key]
}

func (r *recreations) count() int {
	r.Lock()
	defer r.Unlock()
	return len(r.waiting)
}

// FinishRecreates, for a controller whose policy was removed, waits until no child it deleted to
// recreate is still going, then until the syncs their deletions queued (which create the new
// children) are done; at most timeout. It starts no new Recreate meanwhile, and the controller
// must be stopped after it (the queue takes no more work).
func (c *Controller) FinishRecreates(ctx context.Context, timeout time.Duration) {
	c.draining.Store(true)
	c.waitForSyncsUnderWay() // they record the Recreates they start
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	logger := klog.FromContext(ctx).WithValues("controller", c.Name())
	for {
		n := c.recreations.count() + c.recreatesGoing()
		if n == 0 {
			break
		}
		logger.V(2).Info("Policy removed: waiting for the children deleted to be recreated to go", "children", n)
		select {
		case <-ctx.Done():
			logger.Info("Policy removed: stopping with Recreates under way; their parents keep no child until a policy manages them again", "children", n, "timeout", timeout)
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

// recreatesGoing counts the cached children of Recreate resources that are being deleted while
// their parent stays: deleted to be recreated.
func (c *Controller) recreatesGoing() int {
	n := 0
	for gvr, res := range c.policy.ChildResources {
		if res.Method != policy.Recreate {
			continue
		}
		for _, obj := range c.children[gvr.String()].List() {
			m, err := metaOf(obj)
			if err != nil || m.GetDeletionTimestamp() == nil || m.GetLabels()[render.LabelPolicy] != c.Name() {
				continue
			}
			if c.parentStays(m.GetLabels()[render.LabelParentUID]) {
				n++
			}
		}
	}
	return n
}

// parentStays reports whether the parent of a UID is cached and not being deleted.
func (c *Controller) parentStays(uid string) bool {
	parents, _ := c.parents.ByIndex(byUID, uid)
	for _, p := range parents {
		if m, err := metaOf(p); err == nil && m.GetDeletionTimestamp() == nil {
			return true
		}
	}
	return false
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

// syncsWhileRemoved reports whether a parent is synced by a controller whose policy was removed:
// only to complete a Recreate under way (its last sync left one waiting, or one of its children
// is going). Nothing else is synced: a parent created after the removal gets no child.
func (c *Controller) syncsWhileRemoved(key string, children []metav1.Object) bool {
	if c.recreations.has(key) {
		return true
	}
	for _, m := range children {
		if m.GetDeletionTimestamp() != nil {
			return true
		}
	}
	return false
}

// holdsRecreate reports whether a Recreate must not start: the policy is being removed, and the
// child it would delete stays as it is. One the parent's last sync started is under way, though
// the cache may not show its child going yet: its deletion is sent again (it is the same).
func (c *Controller) holdsRecreate(parent, obs *unstructured.Unstructured) bool {
	return c.draining.Load() && obs.GetDeletionTimestamp() == nil && !c.recreations.has(parentKey(parent))
}
