package preview

import (
	"fmt"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"metacel.dev/metacel/runtime/contract"
	"metacel.dev/metacel/runtime/decide"
	"metacel.dev/metacel/runtime/render"
)

// Change is one action of a sync on an observed object.
type Change struct {
	// Action is one of decide's: Delete, Release, Recreate, Conflict or UpdateBookkeeping
	Action decide.Action
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

// withoutHandWritten drops the recreations and bookkeeping patches of observed children written by
// hand, not rendered (no metacel.dev/content-hash annotation, nor the desired-hash of runtimes
// before it): offline, such a child keeps what it was given (a Pod's status, say), and a note says
// so where the answer would be a recreation. An in-place update is kept: the runtime applies it,
// and what the API server returns (the observed object with the policy's fields merged in,
// decide.Written) is what the status after the sync's writes reads, as the runtime's does.
func withoutHandWritten(steps []decide.Step) (kept []decide.Step, notes []string) {
	for _, st := range steps {
		if st.Observed == nil || rendered(st.Observed) ||
			st.Action != decide.Recreate && st.Action != decide.UpdateBookkeeping {
			kept = append(kept, st)
			continue
		}
		if st.Action == decide.Recreate {
			notes = append(notes, fmt.Sprintf("not compared: observed %s %s has no %s annotation (it was not rendered): give it as render prints it to see whether it would be recreated",
				st.Observed.GetKind(), render.NamespacedName(st.Observed), contract.AnnotationContentHash))
		}
	}
	return kept, notes
}

// rendered reports whether an observed child was rendered: it carries a hash of what the policy
// computed, the content hash or the desired-hash of runtimes before it.
func rendered(obj *unstructured.Unstructured) bool {
	a := obj.GetAnnotations()
	return a[contract.AnnotationContentHash] != "" || a[contract.AnnotationDesiredHash] != ""
}

// changesOf lists what a sync's steps (decide.Writes, as the runtime decides them) do to the
// observed objects besides applying the desired children: conflicts, recreations, bookkeeping
// patches, deletions and releases, in the sync's order.
func changesOf(steps []decide.Step) []Change {
	var changes []Change
	for _, st := range steps {
		switch st.Action {
		case decide.Recreate, decide.Delete, decide.Release, decide.Wait, decide.Conflict, decide.UpdateBookkeeping:
			changes = append(changes, Change{Action: st.Action, Object: st.Observed, Why: st.Why})
		}
	}
	return changes
}
