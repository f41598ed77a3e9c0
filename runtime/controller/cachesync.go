package controller

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	"metacel.dev/metacel/runtime/informers"
)

// Delays of the reports of caches that do not sync: the first after notSyncedFirst, then every
// notSyncedEvery.
var (
	notSyncedFirst = 10 * time.Second
	notSyncedEvery = time.Minute
)

// waitForCaches waits until the checks are done (the controller's informers have synced), and
// reports false if ctx ends first. The checks are read again at each wait: with sharding, the
// informers of slots given up meanwhile are released and never sync, those of slots gained are
// new. While they have not, it says which resources are missing and
// why (their last list error: a resource the runtime may not list, say), in the log and through
// report (Options.OnNotSynced, when set): a policy whose caches never sync never runs, and must
// not look healthy.
func waitForCaches(ctx context.Context, policyName string, checks func() []cache.DoneChecker, byName func() map[string]cache.SharedIndexInformer, pool *informers.Pool, report func(msg string)) bool {
	wait := notSyncedFirst
	for {
		waitCtx, cancel := context.WithTimeout(ctx, wait)
		synced := cache.WaitFor(waitCtx, "", checks()...)
		cancel()
		switch {
		case synced:
			return true
		case ctx.Err() != nil:
			return false
		}
		msg := notSynced(policyName, byName(), pool)
		klog.FromContext(ctx).Error(nil, "Policy waits for its caches", "missing", msg)
		if report != nil {
			report(msg)
		}
		wait = notSyncedEvery
	}
}

// doneCheckers returns what tells when the informers have synced and delivered what they listed
// to the controller's handlers, every parent queued: the workers start as soon as that is so (no
// polling: cache.WaitForCacheSync checks every 100 ms), on a queue where each parent is once.
// delivered are those of the informers acquired besides the caches'.
func doneCheckers(cs *caches, delivered []cache.DoneChecker) []cache.DoneChecker {
	var out []cache.DoneChecker
	for _, rc := range cs.all() {
		out = append(out, rc.Delivered()...)
	}
	return append(out, delivered...)
}

// informersByName returns a controller's informers by resource (and slot, with sharding).
func informersByName(cs *caches, related *relatedWatch) map[string]cache.SharedIndexInformer {
	out := map[string]cache.SharedIndexInformer{}
	for _, rc := range cs.all() {
		for i, inf := range rc.Informers() {
			name := rc.GVR().String()
			if rc.Sharded() {
				name = fmt.Sprintf("%s (slot informer %d)", name, i)
			}
			out[name] = inf
		}
	}
	maps.Copy(out, related.informers)
	if related.namespaces != nil {
		out[namespacesGVR.String()] = related.namespaces
	}
	return out
}

// notSynced names the resources whose caches have not synced, with their last list error.
func notSynced(policyName string, byName map[string]cache.SharedIndexInformer, pool *informers.Pool) string {
	var parts []string
	for gvr, inf := range byName {
		if inf.HasSynced() {
			continue
		}
		why := "not listed yet"
		if err := pool.WatchError(inf); err != nil {
			why = err.Error()
		}
		parts = append(parts, fmt.Sprintf("%s (%s)", gvr, why))
	}
	slices.Sort(parts)
	return fmt.Sprintf("policy %q does not run: the caches of %s have not synced", policyName, strings.Join(parts, "; "))
}
