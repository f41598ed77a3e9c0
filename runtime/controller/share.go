package controller

import (
	"context"
	"sync/atomic"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"

	"metacel.dev/metacel/runtime/contract"
	"metacel.dev/metacel/runtime/hashslot"
	"metacel.dev/metacel/runtime/informers"
	"metacel.dev/metacel/runtime/policy"
	"metacel.dev/metacel/runtime/render"
)

// A controller may sync a share of its policy's parents only. During a rollout (package operator)
// two versions of one policy run side by side over the same informers, each syncing the parents
// of its share, which the operator moves step by step from one to the other.
//
// While it holds a share, a controller leaves alone what only a controller holding every parent
// may judge: the children of resources its version does not list (the other version may list
// them) and the parents outside its labelSelector. When one controller takes every parent again
// (TakeAll), it does those cleanups at once, as a controller starting does.

// share is the parents a controller syncs: every parent when holds is nil.
type share struct {
	holds   atomic.Pointer[func(types.UID) bool]
	partial atomic.Bool
	// slots are the slots held, with sharding (sharded): a parent is held when its slot is too
	slots   atomic.Uint64
	sharded atomic.Bool
}

// SetShare makes the controller sync only the parents for which holds is true (nil: every
// parent), from now on: every parent is queued again, so that those it gained are synced at
// once. Called before Run, the controller starts on that share, and skips the cleanups that need
// every parent until TakeAll.
func (c *Controller) SetShare(holds func(types.UID) bool) {
	c.share.partial.Store(holds != nil)
	if holds == nil {
		c.share.holds.Store(nil)
	} else {
		c.share.holds.Store(&holds)
	}
	c.parentStates.resetInputs()
	if c.caches.parents != nil {
		c.enqueueAll(c.queue.Add)
	}
}

// TakeAll makes the controller sync every parent again, after a share; previous is the other
// version that held the rest, whose children of resources this version does not list are removed
// now, as when a controller replaces a version (Options.Replaces).
func (c *Controller) TakeAll(ctx context.Context, previous *policy.Compiled) {
	ctx = klog.NewContext(ctx, klog.FromContext(ctx).WithValues("controller", c.Name()))
	c.previous = previous
	c.SetShare(nil)
	c.cleanup.pruneDropped(ctx)
	c.cleanup.letGoOfParentsOutOfSelector(ctx)
}

// has reports whether the parent of that UID is in the share: the controller's to sync.
func (s *share) has(uid types.UID) bool {
	if s.sharded.Load() && !hashslot.Set(s.slots.Load()).Has(hashslot.Of(uid)) {
		return false
	}
	f := s.holds.Load()
	return f == nil || (*f)(uid)
}

// writesFor returns ctx for the writes of a sync of the parent of that UID: with sharding, they
// say the parent's slot, so that the replica's write fence lets them through only while the
// replica holds it (hashslot.WithSlot), each of them, not only when the sync began.
func (s *share) writesFor(ctx context.Context, uid types.UID) context.Context {
	if !s.sharded.Load() {
		return ctx
	}
	return hashslot.WithSlot(ctx, hashslot.Of(uid))
}

// whole reports whether the share is every parent (no share set).
func (s *share) whole() bool { return !s.partial.Load() }

// Counts are a controller's parents by their conditions, as its syncs last computed them.
type Counts struct {
	// Parents is the number of parents the controller syncs (its share, during a rollout).
	Parents int
	// Ready have the condition Ready=True; Failing have Synced=False.
	Ready, Failing int
}

// parentMark is the conditions of a parent's last sync that Counts counts.
type parentMark struct {
	ready, failing bool
}

// setMark remembers m for the parent of that key and UID (parentState.mark), and forgets what it
// remembered of an earlier parent of the same key.
func (s *parentStates) setMark(key string, uid types.UID, m parentMark) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.byMarkedUID == nil {
		s.byMarkedUID = map[types.UID]*parentState{}
	}
	p := s.stateLocked(key)
	if p.marked && p.markedUID != uid {
		delete(s.byMarkedUID, p.markedUID)
	}
	p.mark, p.markedUID, p.marked = m, uid, true
	s.byMarkedUID[uid] = p
}

// markedUID returns the UID of the parent of that key whose conditions are remembered.
func (s *parentStates) markedUID(key string) (types.UID, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if p := s.byKey[key]; p != nil && p.marked {
		return p.markedUID, true
	}
	return "", false
}

// markParent remembers the conditions a sync computed for a parent.
func (s *parentStates) markParent(key string, uid types.UID, conds []render.Condition) {
	var m parentMark
	for _, cond := range conds {
		switch {
		case cond.Type == contract.ConditionReady && cond.Status == "True":
			m.ready = true
		case cond.Type == contract.ConditionSynced && cond.Status == "False":
			m.failing = true
		}
	}
	s.setMark(key, uid, m)
}

// SyncedParent reports whether this controller has synced that parent (its key and UID) since it
// started (whatever the outcome): during a rollout, a parent's conditions speak for the new
// version only once its controller has synced it.
func (c *Controller) SyncedParent(parent metav1.Object) bool {
	uid, ok := c.parentStates.markedUID(parentKey(parent))
	return ok && uid == parent.GetUID()
}

// Counts counts the parents the controller syncs now, and of them those its syncs found ready and
// failing. A parent not synced yet counts as neither. It reads each cached parent once, and
// allocates nothing per parent: the policy status counts every second.
func (c *Controller) Counts() Counts {
	var out Counts
	if c.caches.parents == nil {
		return out
	}
	objs := c.caches.parents.List()
	c.parentStates.mu.Lock()
	defer c.parentStates.mu.Unlock()
	for _, obj := range objs {
		m, err := informers.MetaOf(obj)
		if err != nil || !c.share.has(m.GetUID()) {
			continue
		}
		out.Parents++
		var mark parentMark
		if p := c.parentStates.byMarkedUID[m.GetUID()]; p != nil {
			mark = p.mark
		}
		if mark.ready {
			out.Ready++
		}
		if mark.failing {
			out.Failing++
		}
	}
	return out
}

// HeldParents returns the metadata of the cached parents the controller syncs now (its share):
// package compact decodes one.
func (c *Controller) HeldParents() []metav1.Object {
	if c.caches.parents == nil {
		return nil
	}
	var out []metav1.Object
	for _, obj := range c.caches.parents.List() {
		if m, err := informers.MetaOf(obj); err == nil && c.share.has(m.GetUID()) {
			out = append(out, m)
		}
	}
	return out
}
