package controller

import (
	"sync"
	"sync/atomic"
	"time"

	"k8s.io/apimachinery/pkg/types"

	"metacel.dev/metacel/runtime/memo"
)

// What a controller remembers of a parent between its syncs is one parentState, held by the
// parent's key in parentStates, so that forgetting a parent that is gone is one delete (forget).
// Workers sync different parents at once, and the child informers' handlers read a parent's
// child-event spacing, so every access holds the one lock, briefly: nothing under it reads a
// cache, makes a request or encodes an object.
//
// Not per parent, and kept apart: the index of the related objects each parent read
// (relatedIndex), which is looked up by related object to route its events; the parents that
// left the cache with the cleanup finalizer (leftwithfinalizer.go), which must outlive the forgetting
// of a parent gone; and the children created lately (recentcreates.go), by child name, in each
// child cache. The fingerprints of a recalled memo are by fingerprint, not by parent, but are
// held here: a recall moves one into a parent's state, under the same lock.

// parentState is what the controller remembers of one parent.
type parentState struct {
	// inputs is the fingerprint of the inputs of the parent's last successful sync, when
	// knowsInputs (inputs.go)
	inputs      uint64
	knowsInputs bool
	// mark is the conditions its last sync computed, for Parents.Count, for the parent of markedUID,
	// when marked (share.go)
	mark      parentMark
	marked    bool
	markedUID types.UID
	// writes are, by child identity, what metacel last wrote of each child and when others undid
	// it (undonewrites.go)
	writes writesByID
	// writingSyncs counts the syncs in a row that wrote children (childeventspacing.go)
	writingSyncs int
	// seldom is what few parents need remembered, nil for the others: every parent has a state,
	// and these fields took 48 of its 128 bytes
	seldom *seldomState
}

// seldomState is what few parents need remembered (parentState.seldom).
type seldomState struct {
	// refused are the children (and "status") whose last write the API server refused for good,
	// by identity, for the parent of refusedUID; nil when none (refusedwrites.go)
	refusedUID types.UID
	refused    map[string]refusal
	// conditions sums up the last conditions of a parent without a status subresource (status.go)
	conditions string
	// recreating are the children, by identity, whose Recreate is under way (recreatesunderway.go)
	recreating map[string]bool
}

// noSeldom is the seldom state of the parents that have none, to be read only.
var noSeldom seldomState

// seldomRead returns the parent's seldom state to read: an empty one when it has none, or no
// state at all (p nil).
func (p *parentState) seldomRead() *seldomState {
	if p == nil || p.seldom == nil {
		return &noSeldom
	}
	return p.seldom
}

// seldomFields returns the parent's seldom state to write, made when it has none.
func (p *parentState) seldomFields() *seldomState {
	if p.seldom == nil {
		p.seldom = &seldomState{}
	}
	return p.seldom
}

// dropSeldomIfEmpty drops the parent's seldom state once it holds nothing.
func (p *parentState) dropSeldomIfEmpty() {
	if r := p.seldom; r != nil && r.refused == nil && r.conditions == "" && r.recreating == nil {
		p.seldom = nil
	}
}

// refusal is a write refused for good (parentState.refused): a hash of what was sent, and the
// error it got.
type refusal struct {
	hash string
	err  error
}

// childWrites is what metacel last wrote of one child, and when its writes were undone
// (parentState.writes).
type childWrites struct {
	written contentSum
	undone  []time.Time
	// deleted: metacel itself deleted the child it wrote last, to recreate it (Recreate): the
	// create that follows re-does nobody else's undoing
	deleted bool
}

// parentMark is the conditions of a parent's last sync that Parents.Count counts.
type parentMark struct {
	ready, failing bool
}

// Counts are a controller's parents by their conditions, as its syncs last computed them.
type Counts struct {
	// Parents is the number of parents the controller syncs (its share, during a rollout).
	Parents int
	// Ready have the condition Ready=True; Failing have Synced=False.
	Ready, Failing int
}

// lastCount is Parents.Count's last count, and the changes it had seen; done once there is one.
type lastCount struct {
	counts Counts
	at     countedChanges
	done   bool
}

// countedChanges are the counters of what Parents.Count counts: parentStates.marksChanged and
// parentEvents, share.changes.
type countedChanges struct {
	marks, parentEvents, share uint64
}

// parentStates holds the controller's parentState of each parent, by parent key.
type parentStates struct {
	mu    sync.Mutex
	byKey map[string]*parentState
	// byMarkedUID finds a parent's state by the UID its conditions were marked for: Parents.Count reads
	// them once per cached parent, by the UID the cache holds
	byMarkedUID map[types.UID]*parentState
	// recalled are the fingerprints of the memo not matched yet, with the byte kept beside each
	// (memo.go)
	recalled memo.Entries
	// marksChanged counts the changes of the marks (setMark, forget), parentEvents the parent
	// events that changed a parent (noteParentEvent, not under mu), and counted is the last
	// Parents.Count with the changes it had seen: share.go
	marksChanged uint64
	parentEvents atomic.Uint64
	counted      lastCount
}

// stateLocked returns the state of a parent, made empty if it has none; the caller holds mu.
func (s *parentStates) stateLocked(key string) *parentState {
	if s.byKey == nil {
		s.byKey = map[string]*parentState{}
	}
	p := s.byKey[key]
	if p == nil {
		p = &parentState{}
		s.byKey[key] = p
	}
	return p
}

// forget drops everything remembered of a parent that is gone.
func (s *parentStates) forget(key string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	p := s.byKey[key]
	if p == nil {
		return
	}
	if p.marked {
		delete(s.byMarkedUID, p.markedUID)
		s.marksChanged++
	}
	delete(s.byKey, key)
}
