package decide

import (
	"errors"
	"maps"
	"slices"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"metacel.dev/metacel/runtime/contract"
	"metacel.dev/metacel/runtime/policy"
	"metacel.dev/metacel/runtime/render"
)

// Action is what a sync does with one object.
type Action string

// The actions of a sync.
const (
	// Create: a desired child that does not exist is created.
	Create Action = "create"
	// Update: a desired child that differs is applied in place (InPlace).
	Update Action = "update"
	// Recreate: a desired child that differs, of a Recreate resource, is deleted, then created
	// anew once it is gone.
	Recreate Action = "recreate"
	// Await: a desired child is being deleted (a Recreate under way, or someone deleted it): it
	// is created anew once it is gone, by the sync its deletion causes.
	Await Action = "await"
	// Delete: a child no longer desired is deleted.
	Delete Action = "delete"
	// Release: a child no longer desired, with deletionPolicy Orphan, is released.
	Release Action = "release"
	// Wait: a child no longer desired (or a deleted parent's) is not deleted yet: a child going
	// away too waits for it (reads it, or names it in dependsOn), so it is deleted once that one
	// is gone (Step.Blocker), by the sync its deletion causes: children go in the reverse of the
	// order they are applied in (Removals).
	Wait Action = "wait"
	// Refuse: a desired child that differs in a field its kind does not let change (a
	// Deployment's spec.selector, a RoleBinding's roleRef, a CRD field with the rule
	// self == oldSelf), to be applied in place: the API server would refuse the update as
	// Invalid, so the sync fails there (ApplyFailed, Synced=False) and writes it not; Why says
	// which field, and the fix (Recreate, or a name that changes with the field).
	Refuse Action = "refuse"
	// Conflict: an object that is not the parent's child holds a desired child's name: the sync
	// fails with ChildConflict until it is gone.
	Conflict Action = "conflict"
	// UpdateBookkeeping: a desired child that holds what the policy wants, but not the
	// bookkeeping metacel writes for itself (a key an earlier runtime did not write, or wrote
	// under another name; a label someone removed), whatever its update strategy: its metadata
	// is patched (Step.Bookkeeping), the child is never written whole nor recreated for it.
	UpdateBookkeeping Action = "update-bookkeeping"
)

// Step is one action of a sync.
type Step struct {
	Action Action
	// Child is the desired child (create, update, recreate, await, conflict); nil otherwise.
	Child *render.Child
	// Observed is the object acted on as the sync observed it; nil for a create.
	Observed *unstructured.Unstructured
	// Why says why, for the offline commands; for a conflict, why the object is not the parent's.
	Why string
	// Bookkeeping is the patch of an UpdateBookkeeping step; nil otherwise.
	Bookkeeping *Bookkeeping
	// Blocker is, for a Wait step, the child going away that waits for Observed; nil otherwise.
	Blocker *unstructured.Unstructured
	// Foreground: a Delete step deletes in the foreground (the object is gone only once what it
	// owns is: a Job's Pods, a Deployment's ReplicaSets and Pods), for a child that waits for
	// others (its After), which wait for it until it is gone.
	Foreground bool
}

// Writes decides what a sync writes: the steps in the order the sync takes them (see the
// package doc). kids are the observed objects as render.RenderObserved sorted them for out;
// versions are the policy and the version it replaces (nil when none), whose entries say the
// deletion policy of a child that does not record its own.
func Writes(out *render.Output, kids *render.ObservedChildren, versions ...*policy.Compiled) []Step {
	steps := conflicts(out, kids.Foreign)
	taken := map[string]bool{}
	for _, s := range steps {
		taken[render.Identity(s.Observed)] = true
	}
	for i := range out.Children {
		child := &out.Children[i]
		if taken[render.Identity(child.Object)] {
			continue
		}
		if s, ok := StepFor(child, render.FindSame(kids.ByID[child.ID], child.Object)); ok {
			steps = append(steps, s)
		}
	}
	return append(steps, Removals(kids.Undesired, beingDeleted(kids.ByID), versions...)...)
}

// beingDeleted are the desired children observed being deleted: going away, they hold back the
// deletion of the undesired children they wait for.
func beingDeleted(byID map[string][]*unstructured.Unstructured) []*unstructured.Unstructured {
	var out []*unstructured.Unstructured
	for _, id := range slices.Sorted(maps.Keys(byID)) {
		for _, o := range byID[id] {
			if o.GetDeletionTimestamp() != nil {
				out = append(out, o)
			}
		}
	}
	return out
}

// StepFor is what a sync does with a desired child observed as obs (nil: missing); false when
// nothing. What the policy computes decides whether the child is written (its content: created,
// recreated, applied or refused, as its update strategy says); what metacel writes for itself
// never does: a child that differs only there gets an UpdateBookkeeping step.
func StepFor(child *render.Child, obs *unstructured.Unstructured) (Step, bool) {
	switch {
	case obs == nil:
		return Step{Action: Create, Child: child, Why: "a new child"}, true
	case obs.GetDeletionTimestamp() != nil:
		return Step{Action: Await, Child: child, Observed: obs, Why: "being deleted: created anew once it is gone"}, true
	}
	held := contentHeld(child, obs)
	if !held && child.Resource.Method != policy.OnDelete {
		return changedStep(child, obs), true
	}
	if b := bookkeepingOf(child, obs, held); b != nil {
		return Step{Action: UpdateBookkeeping, Child: child, Observed: obs, Bookkeeping: b,
			Why: "update bookkeeping (" + b.String() + "): the policy's content is unchanged, so only metadata is patched, never the child recreated"}, true
	}
	return Step{}, false
}

// changedStep is what a sync does with a child whose content differs: recreated, refused, or
// applied in place, as its resource's update strategy and its kind say.
func changedStep(child *render.Child, obs *unstructured.Unstructured) Step {
	if child.Resource.Method == policy.Recreate {
		return Step{Action: Recreate, Child: child, Observed: obs, Why: "its resource's updateStrategy is Recreate and the policy wants it changed"}
	}
	if field := immutableChange(child, obs); field != "" {
		return Step{Action: Refuse, Child: child, Observed: obs, Why: immutableMessage(child, field)}
	}
	return Step{Action: Update, Child: child, Observed: obs, Why: "differs from the live object: applied"}
}

// Refusal returns the failure of the first Refuse step of a sync, as the parent's Synced
// condition would show it; nil when the sync has none.
func Refusal(steps []Step) error {
	for _, s := range steps {
		if s.Action == Refuse {
			return &render.Error{Reason: contract.ReasonApplyFailed, Err: errors.New(s.Why)}
		}
	}
	return nil
}

// Removal is the step that removes a child: released when its deletion policy (what it records,
// else its entry in the first of versions that has it) is Orphan, else deleted.
func Removal(obs *unstructured.Unstructured, versions ...*policy.Compiled) Step {
	if render.DeletionPolicyOf(obs, versions...) == policy.DeletionOrphan {
		return Step{Action: Release, Observed: obs, Why: "no longer desired, deletionPolicy Orphan"}
	}
	return Step{Action: Delete, Observed: obs, Why: "no longer desired"}
}

// conflicts are the foreign objects that hold a desired child's name: the sync cannot create it.
func conflicts(out *render.Output, foreign []render.ForeignObject) []Step {
	desired := map[string]*render.Child{}
	for i := range out.Children {
		desired[render.Identity(out.Children[i].Object)] = &out.Children[i]
	}
	var steps []Step
	for _, f := range foreign {
		if child := desired[render.Identity(f.Object)]; child != nil {
			steps = append(steps, Step{Action: Conflict, Child: child, Observed: f.Object, Why: f.Why})
		}
	}
	return steps
}
