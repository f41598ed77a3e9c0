package decide

import (
	"context"
	"encoding/json"
	"slices"

	jsonpatch "gopkg.in/evanphx/json-patch.v4"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"metacel.dev/metacel/runtime/contract"
	"metacel.dev/metacel/runtime/expr"
	"metacel.dev/metacel/runtime/policy"
	"metacel.dev/metacel/runtime/render"
)

// Written is what the API server returns, offline, for the writes of steps: a created child is
// the desired object alone, and so is a recreated one (offline, the old one is gone at once); an
// updated one is the observed object with the desired fields merged in (an apply keeps what the
// policy does not set: the child's status, say), and one whose bookkeeping is patched the
// observed object with the patch merged in.
func Written(steps []Step) []*unstructured.Unstructured {
	var out []*unstructured.Unstructured
	for _, s := range steps {
		switch s.Action {
		case Create, Recreate:
			out = append(out, s.Child.Object.DeepCopy())
		case Update:
			out = append(out, applied(s.Observed, s.Child.Object))
		case UpdateBookkeeping:
			out = append(out, applied(s.Observed, &unstructured.Unstructured{Object: map[string]any{"metadata": s.Bookkeeping.Patch()}}))
		}
	}
	return out
}

// applied is observed with desired's fields merged in (a JSON merge patch); observed itself when
// they cannot be merged.
func applied(observed, desired *unstructured.Unstructured) *unstructured.Unstructured {
	base, err := json.Marshal(observed.Object)
	if err != nil {
		return observed.DeepCopy()
	}
	patch, err := json.Marshal(desired.Object)
	if err != nil {
		return observed.DeepCopy()
	}
	merged, err := jsonpatch.MergePatch(base, patch)
	if err != nil {
		return observed.DeepCopy()
	}
	out := &unstructured.Unstructured{}
	if err := out.UnmarshalJSON(merged); err != nil {
		return observed.DeepCopy()
	}
	return out
}

// ChildrenAfter is the observed children, by child id, as writes left them: each object written
// in place of what was observed of it.
func ChildrenAfter(observed map[string][]*unstructured.Unstructured, written []*unstructured.Unstructured) map[string][]*unstructured.Unstructured {
	now := make(map[string][]*unstructured.Unstructured, len(observed))
	for id, objs := range observed {
		now[id] = slices.Clone(objs)
	}
	for _, got := range written {
		id := got.GetLabels()[contract.LabelChildID]
		now[id] = slices.DeleteFunc(now[id], func(o *unstructured.Unstructured) bool { return render.Identity(o) == render.Identity(got) })
		now[id] = append(now[id], got)
	}
	return now
}

// AfterWrites renders the parent again (render.Rerender) with the children as the sync's writes
// left them (ChildrenAfter), so that the status it writes already sees them: a child just created
// exists, and may be ready; one just changed is judged as it now is. It keeps out when nothing
// was written, or when what in.Budget has left cannot pay for a second render as costly as the
// first (or the second fails); sawWrites says whether the output returned saw the children
// written. in.Observed is ignored: observed is what the first render bound. The entries out held
// stay held: the sync wrote none of their children.
func AfterWrites(ctx context.Context, c *policy.Compiled, in render.Input, out *render.Output, observed map[string][]*unstructured.Unstructured, written []*unstructured.Unstructured) (_ *render.Output, sawWrites bool) {
	if len(written) == 0 {
		return out, true
	}
	if in.Budget != nil && in.Budget.Remaining() < expr.SyncCostBudget-in.Budget.Remaining() {
		return out, false
	}
	in.Observed = ChildrenAfter(observed, written)
	in.Hold = out.Held // what waited was not written: it still waits
	again, err := render.Rerender(ctx, c, in, out)
	if err != nil {
		return out, false
	}
	return again, true
}
