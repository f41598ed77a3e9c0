package preview

import (
	"fmt"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"metacel.dev/metacel/runtime/decide"
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

// changesOf lists what a sync does to the observed objects besides applying the desired children,
// from its steps (decide.Writes, as the runtime decides them): conflicts, recreations, deletions
// and releases, in the sync's order. Offline, every observed child counts as applied by metacel.
// An observed child without metacel's desired-hash annotation was written by hand, not rendered:
// it is taken as what the policy wants, and its step is dropped (what returns is the steps the
// sync takes), with a note where the answer would be a recreation.
func changesOf(steps []decide.Step) (taken []decide.Step, changes []Change, notes []string) {
	for _, st := range steps {
		handWritten := st.Observed != nil && st.Observed.GetAnnotations()[render.AnnotationDesiredHash] == ""
		switch st.Action {
		case decide.Update:
			if handWritten {
				continue
			}
		case decide.Recreate:
			if handWritten {
				notes = append(notes, fmt.Sprintf("not compared: observed %s %s has no %s annotation (it was not rendered): give it as render prints it to see whether it would be recreated",
					st.Observed.GetKind(), render.NamespacedName(st.Observed), render.AnnotationDesiredHash))
				continue
			}
			changes = append(changes, Change{Action: Recreate, Object: st.Observed, Why: st.Why})
		case decide.Delete:
			changes = append(changes, Change{Action: Delete, Object: st.Observed, Why: st.Why})
		case decide.Release:
			changes = append(changes, Change{Action: Release, Object: st.Observed, Why: st.Why})
		case decide.Conflict:
			changes = append(changes, Change{Action: Conflict, Object: st.Observed, Why: st.Why})
		}
		taken = append(taken, st)
	}
	return taken, changes, notes
}
