package controller

import (
	"context"
	"slices"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/klog/v2"

	"metacel.dev/metacel/runtime/apply"
	"metacel.dev/metacel/runtime/clusterread"
	"metacel.dev/metacel/runtime/compact"
	"metacel.dev/metacel/runtime/contract"
	"metacel.dev/metacel/runtime/informers"
	"metacel.dev/metacel/runtime/render"
)

// The children of a resource that a new version of the policy no longer lists are not watched
// any more, so no sync would see them again: the controller removes them when it starts, before
// its workers do anything. Which resources those are is read from the ledger (what earlier
// versions recorded, surviving restarts) and the version this controller replaces; the ledger is
// narrowed to the current resources only once their children are gone, and widened to them before
// any of their children is created, so a crash at any point leaves the work to the next start.

// pruneDropped removes the children of the resources recorded for the policy that it no longer
// lists, then records what remains: the current resources, and the dropped ones whose children
// could not all be removed (tried again on the next resync).
func (f *cleanup) pruneDropped(ctx context.Context) {
	logger := klog.FromContext(ctx)
	recorded, err := f.deps.Ledger.ChildResources(ctx, f.policy.Name())
	if err != nil {
		logger.Error(err, "Cannot read which child resources the policy had; the children of resources it no longer lists may stay")
	}
	if f.previous() != nil {
		recorded = append(recorded, sortedResources(f.previous().ChildResources)...)
	}
	keep := sortedResources(f.policy.ChildResources)
	for _, gvr := range recorded {
		if f.lists(gvr.GroupResource()) || slices.Contains(keep, gvr) {
			continue // in another version, a resource listed is its objects all the same
		}
		if !f.pruneResource(ctx, gvr) {
			keep = append(keep, gvr) // some remain: recorded until they are gone
		}
	}
	f.dropped.Store(len(keep) > len(f.policy.ChildResources))
	f.record(ctx, keep)
}

// lists reports whether the policy lists a child resource, in whichever version.
func (f *cleanup) lists(gr schema.GroupResource) bool {
	for gvr := range f.policy.ChildResources {
		if gvr.GroupResource() == gr {
			return true
		}
	}
	return false
}

// record writes the policy's child resources to the ledger, retrying for a while: a resource not
// recorded before its children are created would be forgotten by a restart after it is dropped.
func (f *cleanup) record(ctx context.Context, gvrs []schema.GroupVersionResource) {
	var last error
	err := wait.ExponentialBackoffWithContext(ctx, wait.Backoff{Duration: 100 * time.Millisecond, Factor: 2, Steps: 8}, func(ctx context.Context) (bool, error) {
		last = f.deps.Ledger.RecordChildResources(ctx, f.policy.Name(), gvrs)
		if apierrors.IsForbidden(last) {
			return false, last // RBAC does not change by waiting
		}
		return last == nil, nil
	})
	if err != nil && ctx.Err() == nil {
		klog.FromContext(ctx).Error(last, "Cannot record the policy's child resources; if one is dropped while the runtime restarts, its children stay")
	}
}

// pruneResource deletes, or releases by their recorded deletionPolicy, the policy's children of a
// resource it no longer lists, read from the API server (no informer watches them); it reports
// whether none is left.
func (f *cleanup) pruneResource(ctx context.Context, gvr schema.GroupVersionResource) bool {
	logger := klog.FromContext(ctx)
	items, err := clusterread.ListChildren(ctx, f.deps.Writer.Client(), gvr, f.policy.Name(), "")
	if err != nil {
		logger.Error(err, "Cannot remove the children of a resource the policy no longer lists; will retry", "resource", gvr.String())
		return false
	}
	done := true
	for _, obj := range items {
		if !apply.AppliedBy(obj) || obj.GetDeletionTimestamp() != nil {
			continue
		}
		ctx, ours := f.share.writesFor(ctx, types.UID(obj.GetLabels()[contract.LabelParentUID])) // with sharding, the fence judges each write
		if !ours {
			done = false // another replica's, with sharding: recorded until it has removed it
			continue
		}
		if err := f.writer.removeChild(ctx, f.parentOf(obj), gvr, render.DeletionPolicyOf(obj, f.policy, f.previous()), obj); err != nil {
			logger.Error(err, "Cannot remove a child of a resource the policy no longer lists; will retry", "child", klog.KObj(obj))
			done = false
		}
	}
	return done
}

// pruneDroppedAgain retries, at a resync, the dropped resources whose children could not all be
// removed when the controller started.
func (f *cleanup) pruneDroppedAgain(ctx context.Context) {
	if f.dropped.Load() {
		f.pruneDropped(ctx)
	}
}

func sortedResources[V any](m map[schema.GroupVersionResource]V) []schema.GroupVersionResource {
	out := make([]schema.GroupVersionResource, 0, len(m))
	for gvr := range m {
		out = append(out, gvr)
	}
	slices.SortFunc(out, func(a, b schema.GroupVersionResource) int { return strings.Compare(a.String(), b.String()) })
	return out
}

// parentOf returns the cached parent a child's parent-uid label names, or nil.
func (f *cleanup) parentOf(child *unstructured.Unstructured) *unstructured.Unstructured {
	objs, _ := f.caches.parents.ByIndex(informers.ByUID, child.GetLabels()[contract.LabelParentUID])
	if len(objs) == 0 {
		return nil
	}
	p, _ := compact.Unstructured(objs[0])
	return p
}
