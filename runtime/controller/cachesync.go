package controller

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
)

// Delays of the reports of caches that do not sync: the first after notSyncedFirst, then every
// notSyncedEvery.
const (
	notSyncedFirst = 10 * time.Second
	notSyncedEvery = time.Minute
)

// waitForCaches waits until the controller's informers have synced, and reports false if ctx
// ends first. While they have not, it says which resources are missing and why (their last list
// error: a resource the runtime may not list, say), in the log and through Options.OnNotSynced: a policy
// whose caches never sync never runs, and must not look healthy.
func (c *Controller) waitForCaches(ctx context.Context) bool {
	wait := notSyncedFirst
	for {
		waitCtx, cancel := context.WithTimeout(ctx, wait)
		synced := cache.WaitFor(waitCtx, "", c.hasSynced()...)
		cancel()
		switch {
		case synced:
			return true
		case ctx.Err() != nil:
			return false
		}
		msg := c.notSynced()
		klog.FromContext(ctx).Error(nil, "Policy waits for its caches", "missing", msg)
		if c.opts.OnNotSynced != nil {
			c.opts.OnNotSynced(msg)
		}
		wait = notSyncedEvery
	}
}

// hasSynced returns what tells when the informers have synced and delivered what they listed to
// the controller's handlers, every parent queued: the workers start as soon as that is so (no
// polling: cache.WaitForCacheSync checks every 100 ms), on a queue where each parent is once.
func (c *Controller) hasSynced() []cache.DoneChecker {
	var out []cache.DoneChecker
	for _, rc := range c.caches.all() {
		out = append(out, rc.Delivered()...)
	}
	return append(out, c.delivered...)
}

// notSynced names the resources whose caches have not synced, with their last list error.
func (c *Controller) notSynced() string {
	var parts []string
	for gvr, inf := range c.informers() {
		if inf.HasSynced() {
			continue
		}
		why := "not listed yet"
		if err := c.deps.Pool.WatchError(inf); err != nil {
			why = err.Error()
		}
		parts = append(parts, fmt.Sprintf("%s (%s)", gvr, why))
	}
	slices.Sort(parts)
	return fmt.Sprintf("policy %q does not run: the caches of %s have not synced", c.Name(), strings.Join(parts, "; "))
}
