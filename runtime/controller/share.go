package controller

import (
	"context"
	"sync/atomic"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"metacel.dev/metacel/runtime/contract"
	"metacel.dev/metacel/runtime/hashslot"
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
	// changes counts the changes of the share (set, setSlots), for Parents.Count
	changes atomic.Uint64
}

// set makes the share the parents for which holds is true (nil: every parent).
func (s *share) set(holds func(types.UID) bool) {
	s.partial.Store(holds != nil)
	if holds == nil {
		s.holds.Store(nil)
	} else {
		s.holds.Store(&holds)
	}
	s.changes.Add(1)
}

// setSlots makes the share the parents of the slots s (with sharding).
func (s *share) setSlots(slots hashslot.Set) {
	s.slots.Store(uint64(slots))
	s.changes.Add(1)
}

// has reports whether the parent of that UID is in the share: the controller's to sync.
func (s *share) has(uid types.UID) bool {
	if s.sharded.Load() && !hashslot.Set(s.slots.Load()).Has(hashslot.Of(uid)) {
		return false
	}
	f := s.holds.Load()
	return f == nil || (*f)(uid)
}

// writesFor returns ctx for the writes of a sync of the parent of that UID, and whether the
// parent is in the share (has). With sharding, the writes say the parent's slot, so that the
// replica's write fence lets them through only while the replica holds it (hashslot.WithSlot),
// each of them, not only when the sync began.
func (s *share) writesFor(ctx context.Context, uid types.UID) (context.Context, bool) {
	held := true
	if s.sharded.Load() {
		ctx, held = hashslot.Set(s.slots.Load()).WithSlotOf(ctx, uid)
	}
	f := s.holds.Load()
	return ctx, held && (f == nil || (*f)(uid))
}

// whole reports whether the share is every parent (no share set).
func (s *share) whole() bool { return !s.partial.Load() }

// setMark remembers m for the parent of that key and UID (parentState.mark), and forgets what it
// remembered of an earlier parent of the same key.
func (s *parentStates) setMark(key string, uid types.UID, m parentMark) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.byMarkedUID == nil {
		s.byMarkedUID = map[types.UID]*parentState{}
	}
	p := s.stateLocked(key)
	if p.marked && p.markedUID == uid && p.mark == m {
		return
	}
	if p.marked && p.markedUID != uid {
		delete(s.byMarkedUID, p.markedUID)
	}
	p.mark, p.markedUID, p.marked = m, uid, true
	s.byMarkedUID[uid] = p
	s.marksChanged++
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

// Parents are the parents a controller holds (its share of the cached parents), as its syncs
// found them: what the operator reports of a policy and waits for in a rollout.
type Parents struct {
	caches *caches
	share  *share
	states *parentStates
}

// Synced reports whether this controller has synced that parent (its key and UID) since it
// started (whatever the outcome): during a rollout, a parent's conditions speak for the new
// version only once its controller has synced it.
func (ps Parents) Synced(parent metav1.Object) bool {
	uid, ok := ps.states.markedUID(parentKey(parent))
	return ok && uid == parent.GetUID()
}

// Count counts the parents the controller syncs now, and of them those its syncs found ready and
// failing. A parent not synced yet counts as neither. The policy status counts every second, at
// rest too: Count reads the cached parents (through Cache.All, whose only garbage is client-go's
// copy of the cache's list, 16 bytes a parent) only when something it counts changed since its
// last count: a parent's event (noteParentEvent), a mark (setMark, forget) or the share. Otherwise
// it returns the last count, reading no parent.
func (ps Parents) Count() Counts {
	if ps.caches.parents == nil {
		return Counts{}
	}
	s := ps.states
	s.mu.Lock()
	defer s.mu.Unlock()
	// what changed is read before the parents are, so a change made while they are read is
	// counted again by the next Count
	now := countedChanges{marks: s.marksChanged, parentEvents: s.parentEvents.Load(), share: ps.share.changes.Load()}
	if s.counted.done && s.counted.at == now {
		return s.counted.counts
	}
	out := ps.countCached()
	s.counted = lastCount{counts: out, at: now, done: true}
	return out
}

// countCached counts the cached parents of the share by their marks; the caller holds states.mu.
func (ps Parents) countCached() Counts {
	var out Counts
	for m := range ps.caches.parents.All() {
		if !ps.share.has(m.GetUID()) {
			continue
		}
		out.Parents++
		var mark parentMark
		if p := ps.states.byMarkedUID[m.GetUID()]; p != nil {
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

// noteParentEvent records an event of the parents' informer that changed a parent (a new
// resourceVersion, or a deletion): the next Count reads the parents again.
func (s *parentStates) noteParentEvent() { s.parentEvents.Add(1) }

// Held returns the metadata of the cached parents the controller syncs now (its share):
// package compact decodes one.
func (ps Parents) Held() []metav1.Object {
	if ps.caches.parents == nil {
		return nil
	}
	var out []metav1.Object
	for _, m := range ps.caches.parents.List() {
		if ps.share.has(m.GetUID()) {
			out = append(out, m)
		}
	}
	return out
}
