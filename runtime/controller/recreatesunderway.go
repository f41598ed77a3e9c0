package controller

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	"metacel.dev/metacel/runtime/contract"
	"metacel.dev/metacel/runtime/informers"
	"metacel.dev/metacel/runtime/policy"
	"metacel.dev/metacel/runtime/render"
)

// A policy removed while one of its Recreates is under way (the old child deleted, still going:
// a Pod in its grace period on a node) must not leave the parent without its child: nothing
// would create it again. FinishRecreates (drain) lets them complete before the controller stops, and
// nothing else: while it waits, a sync takes only the steps that complete a Recreate under way
// (finishes), so no new Recreate starts, nothing is updated or pruned, and a parent without one
// is not synced at all. A child is either replaced or left as it was.
//
// The Recreates under way are those this controller's syncs left waiting for an old child to go
// (parentState.recreating), and, when the wait starts, the children of Recreate
// resources the cache shows going while their parent stays (a predecessor's, or one whose sync
// has not run yet).

// recordRecreating sets what a parent's sync left waiting (parentState.recreating): all of it
// when the sync completed; when it failed, what it started is added to what was waiting before
// (its retry finishes them).
func (s *parentStates) recordRecreating(key string, waiting []string, complete bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if complete {
		if p := s.byKey[key]; p != nil && p.seldom != nil {
			p.seldom.recreating = nil
			p.dropSeldomIfEmpty()
		}
	}
	for _, id := range waiting {
		s.markRecreatingLocked(key, id)
	}
}

// markRecreating adds one child to a parent's Recreates under way.
func (s *parentStates) markRecreating(key, identity string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.markRecreatingLocked(key, identity)
}

func (s *parentStates) markRecreatingLocked(key, identity string) {
	r := s.stateLocked(key).seldomFields()
	if r.recreating == nil {
		r.recreating = map[string]bool{}
	}
	r.recreating[identity] = true
}

// isRecreating reports whether a child's Recreate is under way.
func (s *parentStates) isRecreating(key, identity string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.byKey[key].seldomRead().recreating[identity]
}

// recreatingAny reports whether any Recreate of the parent is under way.
func (s *parentStates) recreatingAny(key string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.byKey[key].seldomRead().recreating) > 0
}

// countRecreating is how many parents have Recreates under way.
func (s *parentStates) countRecreating() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, p := range s.byKey {
		if len(p.seldomRead().recreating) > 0 {
			n++
		}
	}
	return n
}

// drain completes the Recreates under way of a controller whose policy was removed.
type drain struct {
	policy *policy.Compiled
	caches *caches
	states *parentStates
	// syncing is held (read) by each sync; enqueue asks for a sync of a parent
	syncing *sync.RWMutex
	enqueue func(key string)
	// draining is set once the policy was removed: Recreates under way complete, no new one
	// starts; news wakes the wait for them
	draining atomic.Bool
	news     chan struct{}
}

// finish waits until the Recreates under way have completed (the old children gone, the new
// ones created by the syncs their deletions cause), then until the syncs queued are done
// (shutDownWithDrain); at most until ctx is done or timeout.
func (d *drain) finish(ctx context.Context, timeout time.Duration, shutDownWithDrain func()) {
	d.draining.Store(true)
	d.waitForSyncsUnderWay() // they record the Recreates they start
	d.markRecreatesGoing()
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	logger := klog.FromContext(ctx)
	for n := d.states.countRecreating(); n > 0; n = d.states.countRecreating() {
		logger.V(2).Info("Policy removed: waiting for its Recreates under way", "parents", n)
		select {
		case <-ctx.Done():
			logger.Info("Policy removed: stopping with Recreates under way; their parents keep no child until a policy manages them again", "parents", n, "timeout", timeout)
			return
		case <-d.news:
		}
	}
	drained := make(chan struct{})
	go func() { shutDownWithDrain(); close(drained) }()
	select {
	case <-drained:
	case <-ctx.Done():
	}
}

// skips reports whether a sync of the parent is skipped: the policy was removed, and the parent
// has no Recreate under way to complete.
func (d *drain) skips(key string) bool {
	return d.draining.Load() && !d.states.recreatingAny(key)
}

// waitForSyncsUnderWay returns once the syncs under way are done (each holds syncing's read lock).
func (d *drain) waitForSyncsUnderWay() {
	d.syncing.Lock()
	defer d.syncing.Unlock()
}

// markRecreatesGoing marks as under way the cached children of Recreate resources that are
// being deleted while their parent stays, and queues their parents.
func (d *drain) markRecreatesGoing() {
	for gvr, res := range d.policy.ChildResources {
		if res.Method != policy.Recreate {
			continue
		}
		for m := range d.caches.children[gvr.String()].All() {
			if m.GetDeletionTimestamp() == nil || contract.ChildPolicy(informers.LabelsOf(m)) != d.policy.Name() {
				continue
			}
			if key, ok := d.stayingParent(informers.LabelsOf(m).Get(contract.LabelParentUID)); ok {
				id := render.Identity(&unstructured.Unstructured{Object: map[string]any{
					"apiVersion": res.GVK().GroupVersion().String(), "kind": res.Kind,
					"metadata": map[string]any{"namespace": m.GetNamespace(), "name": m.GetName()}}})
				d.states.markRecreating(key, id)
				d.enqueue(key)
			}
		}
	}
}

// stayingParent returns the key of the parent of a UID when it is cached and not being deleted.
func (d *drain) stayingParent(uid string) (string, bool) {
	parents, _ := d.caches.parents.ByIndex(informers.ByUID, uid)
	for _, p := range parents {
		if p.GetDeletionTimestamp() == nil {
			key, err := cache.MetaNamespaceKeyFunc(p)
			return key, err == nil
		}
	}
	return "", false
}

// wake wakes finish up, when it waits, after a child's deletion or a sync.
func (d *drain) wake() {
	if !d.draining.Load() {
		return
	}
	select {
	case d.news <- struct{}{}:
	default:
	}
}
