package controller

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"

	"metacel.dev/metacel/runtime/render"
)

// A parent that stops matching the policy's labelSelector leaves the parent informer as if it were
// deleted. If it carries the cleanup finalizer, nothing would ever remove it, and deleting the
// parent would hang: the controller remembers such parents and lets go of them.

// leavingSet holds the parents that left the cache with the cleanup finalizer: key to UID.
type leavingSet struct {
	sync.Mutex
	uids map[string]types.UID
}

// noteLeaving remembers a parent that left the cache, if it had the cleanup finalizer.
func (c *Controller) noteLeaving(obj any) {
	m, err := metaOf(obj)
	if err != nil || !slices.Contains(m.GetFinalizers(), render.Finalizer) {
		return
	}
	key, err := cache.DeletionHandlingMetaNamespaceKeyFunc(obj)
	if err != nil {
		return
	}
	c.rememberLeaving(key, m.GetUID())
}

func (c *Controller) rememberLeaving(key string, uid types.UID) {
	c.leaving.Lock()
	defer c.leaving.Unlock()
	c.leaving.uids[key] = uid
}

func (c *Controller) takeLeaving(key string) (types.UID, bool) {
	c.leaving.Lock()
	defer c.leaving.Unlock()
	uid, ok := c.leaving.uids[key]
	delete(c.leaving.uids, key)
	return uid, ok
}

// letGo handles a parent that left the cache with the cleanup finalizer. Deleted, it is gone, or
// being deleted: it is finalized. Out of the labelSelector, metacel lets go of it as when its
// policy is removed: the finalizer goes and its children stay where they are.
func (c *Controller) letGo(ctx context.Context, key string, uid types.UID) error {
	ns, name, _ := cache.SplitMetaNamespaceKey(key)
	live, err := c.deps.Writer.Get(ctx, c.policy.Parent.GVR, ns, name)
	switch {
	case apierrors.IsNotFound(err):
		return nil
	case err != nil:
		c.rememberLeaving(key, uid)
		return fmt.Errorf("read parent %q: %w", key, err)
	case live.GetUID() != uid || c.selector.Matches(labels.Set(live.GetLabels())):
		return nil // another object of that name, or back in scope (the cache has it again)
	case live.GetDeletionTimestamp() != nil:
		if err := c.finalize(ctx, live); err != nil {
			c.rememberLeaving(key, uid)
			return err
		}
		if slices.Contains(live.GetFinalizers(), render.Finalizer) { // children still going
			c.rememberLeaving(key, uid)
			c.queue.AddAfter(key, time.Second)
		}
		return nil
	}
	if err := c.deps.Writer.SetFinalizer(ctx, c.policy.Parent.GVR, live, render.Finalizer, false); err != nil {
		c.rememberLeaving(key, uid)
		return applyError("remove the finalizer of", live, err)
	}
	c.deps.Recorder.Eventf(live, nil, "Normal", "LeftPolicy", "Release",
		"No longer matches the labelSelector of policy %q: metacel lets go of it; its children stay and are no longer cleaned up with it", c.Name())
	return nil
}
