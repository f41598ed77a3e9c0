package controller

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	"metacel.dev/metacel/runtime/clusterread"
	"metacel.dev/metacel/runtime/contract"
	"metacel.dev/metacel/runtime/informers"
)

// A parent that stops matching the policy's labelSelector leaves the parent informer as if it were
// deleted. If it carries the cleanup finalizer, nothing would ever remove it, and deleting the
// parent would hang: the controller remembers such parents and lets go of them.

// parentsLeftWithFinalizer holds the parents that left the cache with the cleanup finalizer: key to UID.
type parentsLeftWithFinalizer struct {
	sync.Mutex
	uids map[string]types.UID
}

// note remembers a parent that left the cache, if it had the cleanup finalizer.
func (l *parentsLeftWithFinalizer) note(obj any) {
	m, err := informers.MetaOf(obj)
	if err != nil || !slices.Contains(m.GetFinalizers(), contract.Finalizer) {
		return
	}
	key, err := cache.DeletionHandlingMetaNamespaceKeyFunc(obj)
	if err != nil {
		return
	}
	l.remember(key, m.GetUID())
}

// remember remembers a parent that left the cache with the cleanup finalizer.
func (l *parentsLeftWithFinalizer) remember(key string, uid types.UID) {
	l.Lock()
	defer l.Unlock()
	if l.uids == nil {
		l.uids = map[string]types.UID{}
	}
	l.uids[key] = uid
}

// take returns, and forgets, the UID of a parent that left the cache with the cleanup finalizer.
func (l *parentsLeftWithFinalizer) take(key string) (types.UID, bool) {
	l.Lock()
	defer l.Unlock()
	uid, ok := l.uids[key]
	delete(l.uids, key)
	return uid, ok
}

// letGo handles a parent that left the cache with the cleanup finalizer. Deleted, it is gone, or
// being deleted: it is finalized. Out of the labelSelector, metacel lets go of it as when its
// policy is removed: the finalizer goes and its children stay where they are.
func (f *cleanup) letGo(ctx context.Context, key string, uid types.UID) error {
	ns, name, _ := cache.SplitMetaNamespaceKey(key)
	live, err := f.deps.Writer.Get(ctx, f.policy.Parent.GVR, ns, name)
	switch {
	case apierrors.IsNotFound(err):
		return nil
	case err != nil:
		f.left.remember(key, uid)
		return fmt.Errorf("read parent %q: %w", key, err)
	case live.GetUID() != uid || (*f.selector).Matches(labels.Set(live.GetLabels())):
		return nil // another object of that name, or back in scope (the cache has it again)
	case live.GetDeletionTimestamp() != nil:
		if err := f.finalize(ctx, live); err != nil {
			f.left.remember(key, uid)
			return err
		}
		if slices.Contains(live.GetFinalizers(), contract.Finalizer) { // children still going: their deletions re-sync it too
			f.left.remember(key, uid)
			f.requeueAfter(key, stillGoing(f.deps.Clock.Since(live.GetDeletionTimestamp().Time)))
		}
		return nil
	}
	if _, err := f.deps.Writer.SetFinalizer(ctx, f.policy.Parent.GVR, live, contract.Finalizer, false); err != nil {
		f.left.remember(key, uid)
		return applyError("remove the finalizer of", live, err)
	}
	f.deps.Recorder.Eventf(live, nil, "Normal", "LeftPolicy", "Release",
		"No longer matches the labelSelector of policy %q: metacel lets go of it; its children stay and are no longer cleaned up with it", f.policy.Name())
	return nil
}

// stillGoing is how long a parent being deleted for age, whose children are still going, waits
// before it is looked at again: a second at first, a quarter of its age later, at most a minute
// (a child that never goes is not asked for every second, for ever).
func stillGoing(age time.Duration) time.Duration {
	return min(max(age/4, time.Second), time.Minute)
}

// letGoOfParentsOutOfSelector finds, in the API server, the parents that carry the cleanup finalizer but no
// longer match the policy's labelSelector, and lets go of each: those whose labels changed while
// the runtime was down, and all of them when the selector itself changed. The cache cannot say
// (it holds matching parents only), and memory does not survive a restart: the objects do. It
// lists, for each requirement of the selector, the parents failing it, so that it reads only the
// parents out of the selector, never all of them.
func (f *cleanup) letGoOfParentsOutOfSelector(ctx context.Context) {
	if f.policy.ParentSelector == nil {
		return
	}
	logger := klog.FromContext(ctx)
	reqs, _ := (*f.selector).Requirements()
	for _, r := range reqs {
		failing, ok := negated(r)
		if !ok {
			continue
		}
		var items []*unstructured.Unstructured // those with the finalizer: most objects out of the selector have none
		err := clusterread.Each(ctx, f.deps.Writer.Client(), f.policy.Parent.GVR, "", failing.String(), func(p *unstructured.Unstructured) error {
			if slices.Contains(p.GetFinalizers(), contract.Finalizer) {
				items = append(items, p)
			}
			return nil
		})
		if err != nil {
			logger.Error(err, "Cannot look for parents that left the policy's labelSelector; will look again at the next start or resync")
			return
		}
		for _, p := range items {
			ctx, ours := f.share.writesFor(ctx, p.GetUID()) // with sharding, the fence judges each write
			if !ours {
				continue
			}
			key, _ := cache.MetaNamespaceKeyFunc(p)
			if err := f.letGo(ctx, key, p.GetUID()); err != nil {
				logger.Error(err, "Cannot let go of a parent that left the policy's labelSelector", "parent", klog.KObj(p))
			}
		}
	}
}

// negated returns the requirement that selects the objects r does not.
func negated(r labels.Requirement) (labels.Requirement, bool) {
	ops := map[selection.Operator]selection.Operator{
		selection.Equals: selection.NotEquals, selection.DoubleEquals: selection.NotEquals, selection.NotEquals: selection.Equals,
		selection.In: selection.NotIn, selection.NotIn: selection.In,
		selection.Exists: selection.DoesNotExist, selection.DoesNotExist: selection.Exists,
	}
	op, ok := ops[r.Operator()]
	if !ok {
		return labels.Requirement{}, false
	}
	n, err := labels.NewRequirement(r.Key(), op, r.ValuesUnsorted())
	if err != nil {
		return labels.Requirement{}, false
	}
	return *n, true
}
