package preview

import (
	"fmt"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"metacel.dev/metacel/runtime/apply"
	"metacel.dev/metacel/runtime/policy"
	"metacel.dev/metacel/runtime/render"
)

// Action is what a sync does to an observed object.
type Action string

// The actions a sync takes on observed objects, beyond applying the desired children.
const (
	// Delete: an observed child no longer desired is deleted.
	Delete Action = "delete"
	// Release: an observed child no longer desired, with deletionPolicy Orphan, is released.
	Release Action = "release"
	// Recreate: a child of a Recreate resource that differs from the desired one is deleted, then
	// created anew.
	Recreate Action = "recreate"
	// Conflict: an object with a desired child's name is not the parent's: the sync fails with
	// ChildConflict until it is gone.
	Conflict Action = "conflict"
)

// Change is one action of a sync on an observed object.
type Change struct {
	Action Action
	Object *unstructured.Unstructured
	Why    string
}

// Key names the change in one line: action, apiVersion, kind and namespace/name.
func (c Change) Key() string {
	return fmt.Sprintf("%s %s %s %s", c.Action, c.Object.GetAPIVersion(), c.Object.GetKind(), render.NamespacedName(c.Object))
}

func (c Change) String() string {
	return fmt.Sprintf("%-8s %s %s %s: %s", c.Action, c.Object.GetAPIVersion(), c.Object.GetKind(), render.NamespacedName(c.Object), c.Why)
}

// plan lists what a sync would do to the observed objects, decided as runtime/controller decides
// (applyChildren, pruneChildren, takeExisting): conflicts first, then recreations in the order of
// the desired children, then deletions and releases in the order given. Offline, every observed
// child counts as applied by metacel. An observed child without metacel's desired-hash annotation
// was written by hand, not rendered: it is taken as what the policy wants (unchanged), and a note
// says so where the answer would be a recreation.
func plan(c *policy.Compiled, out *render.Output, kids *render.ObservedChildren) (changes []Change, notes []string) {
	changes = conflicts(out, kids.Foreign)
	for i := range out.Children {
		child := &out.Children[i]
		obs := render.FindSame(kids.ByID[child.ID], child.Object)
		if obs == nil || obs.GetDeletionTimestamp() != nil || child.Resource.Method != policy.Recreate ||
			!apply.SchemaFor(child.Resource.GVK(), child.Resource.Schema).NeedsApply(child.Object, obs) {
			continue
		}
		if obs.GetAnnotations()[render.AnnotationDesiredHash] == "" {
			notes = append(notes, fmt.Sprintf("not compared: observed %s %s has no %s annotation (it was not rendered): give it as render prints it to see whether it would be recreated",
				obs.GetKind(), render.NamespacedName(obs), render.AnnotationDesiredHash))
			continue
		}
		changes = append(changes, Change{Action: Recreate, Object: obs, Why: "its resource's updateStrategy is Recreate and the policy wants it changed"})
	}
	for _, obs := range kids.Undesired {
		if obs.GetDeletionTimestamp() != nil {
			continue
		}
		if render.DeletionPolicyOf(obs, c) == policy.DeletionOrphan {
			changes = append(changes, Change{Action: Release, Object: obs, Why: "no longer desired, deletionPolicy Orphan"})
		} else {
			changes = append(changes, Change{Action: Delete, Object: obs, Why: "no longer desired"})
		}
	}
	return changes, notes
}

// conflicts are the foreign objects that hold a desired child's name: the sync cannot create it.
func conflicts(out *render.Output, foreign []render.ForeignObject) []Change {
	desired := map[string]bool{}
	for i := range out.Children {
		desired[render.Identity(out.Children[i].Object)] = true
	}
	var changes []Change
	for _, f := range foreign {
		if desired[render.Identity(f.Object)] {
			changes = append(changes, Change{Action: Conflict, Object: f.Object, Why: f.Why})
		}
	}
	return changes
}
