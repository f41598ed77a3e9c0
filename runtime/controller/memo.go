package controller

import (
	"cmp"
	"encoding/json"
	"slices"

	"k8s.io/apimachinery/pkg/types"

	"metacel.dev/metacel/runtime/kinds"
	"metacel.dev/metacel/runtime/memo"
	"metacel.dev/metacel/runtime/policy"
)

// A controller's memory of its parents' last successful syncs (inputs.go) outlives it as a
// memo (package memo): the operator saves what Memory().Entries returns when the controller stops, and
// gives it back through Memory().Recall when the policy's controller starts again. A parent whose inputs match
// an entry is then not rendered, as if this controller had synced it: its conditions, which
// the policy's status counts, are kept beside the fingerprint.
//
// Only a controller whose syncs are a function of the fingerprinted inputs alone keeps a memo:
// no related objects and no namespace consent (their changes while stopped would go unseen), and
// one that holds every parent (not a share during a rollout, not a shard).

// Bits of the byte kept beside each fingerprint: the parent's conditions.
const (
	memoReady byte = 1 << iota
	memoFailing
)

// Memory is a controller's memory of its parents' last successful syncs, as the operator saves
// and recalls it (Controller.Memory).
type Memory struct {
	policy *policy.Compiled
	share  *share
	states *parentStates
}

// Memoizable reports whether the controller's memory may be saved and recalled.
func (m Memory) Memoizable() bool {
	return len(m.policy.Related) == 0 && len(m.policy.Confinement.ConsentLabels()) == 0 &&
		m.share.whole() && !m.share.sharded.Load()
}

// Scope is what the controller's fingerprints do not cover, for its memo (memo.Scope): the
// policy as loaded, and the kinds and schemas of its resources as it was compiled against them.
// "" when it cannot say (memos are then off).
func (m Memory) Scope() string {
	type child struct {
		kinds.Info
		Method policy.UpdateMethod
	}
	var children []child
	for _, info := range m.policy.ChildResources {
		children = append(children, child{Info: info.Info, Method: info.Method})
	}
	slices.SortFunc(children, func(a, b child) int { return cmp.Compare(a.GVR.String(), b.GVR.String()) })
	compiled, err := json.Marshal(struct {
		Policy   *policy.CompositePolicy
		Parent   kinds.Info
		Children []child
	}{m.policy.Policy, m.policy.Parent, children})
	if err != nil {
		return ""
	}
	return memo.Scope(string(compiled))
}

// Recall gives the controller, before Run, the memo of its last run; nil recalls nothing.
func (m Memory) Recall(entries memo.Entries) {
	if m.Memoizable() {
		m.states.recall(entries)
	}
}

// Entries returns what the controller remembers of its parents' last successful syncs, to recall
// after a restart; nil when it is not Memoizable.
func (m Memory) Entries() memo.Entries {
	if !m.Memoizable() {
		return nil
	}
	return m.states.memo()
}

// memo returns the inputs remembered of each parent, with its conditions beside them.
func (s *parentStates) memo() memo.Entries {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := memo.Entries{}
	for _, p := range s.byKey {
		if !p.knowsInputs {
			continue
		}
		var kept byte
		if p.marked {
			kept = p.mark.memo()
		}
		out[p.inputs] = kept
	}
	return out
}

// knewFromMemo reports whether the memo knew these inputs of a parent: it is then remembered, with
// its conditions, as synced.
func (s *parentStates) knewFromMemo(key string, uid types.UID, inputs uint64) bool {
	kept, ok := s.takeRecalled(key, inputs)
	if ok {
		s.setMark(key, uid, parentMark{ready: kept&memoReady != 0, failing: kept&memoFailing != 0})
	}
	return ok
}

func (m parentMark) memo() byte {
	var b byte
	if m.ready {
		b |= memoReady
	}
	if m.failing {
		b |= memoFailing
	}
	return b
}
