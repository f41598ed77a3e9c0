package decide

import (
	"context"
	"slices"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	"metacel.dev/metacel/runtime/expr"
	"metacel.dev/metacel/runtime/policy"
	"metacel.dev/metacel/runtime/render"
)

// Written is what the API server returns, offline, for the writes of steps: a created child is
// the desired object alone, and so is a recreated one (offline, the old one is gone at once); an
// updated one is the observed object with the desired fields merged in (an apply keeps what the
// policy does not set: the child's status, say).
func Written(steps []Step) []*unstructured.Unstructured {
	var out []*unstructured.Unstructured
	for _, s := range steps {
		switch s.Action {
		case Create, Recreate:
			out = append(out, s.Child.Object.DeepCopy())
		case Update:
			obj := s.Observed.DeepCopy()
			mergePatch(obj.Object, runtime.DeepCopyJSON(s.Child.Object.Object))
			out = append(out, obj)
		}
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
		id := got.GetLabels()[render.LabelChildID]
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
// written. in.Observed is ignored: observed is what the first render bound.
func AfterWrites(ctx context.Context, c *policy.Compiled, in render.Input, out *render.Output, observed map[string][]*unstructured.Unstructured, written []*unstructured.Unstructured) (_ *render.Output, sawWrites bool) {
	if len(written) == 0 {
		return out, true
	}
	if in.Budget != nil && in.Budget.Remaining() < expr.SyncCostBudget-in.Budget.Remaining() {
		return out, false
	}
	in.Observed = ChildrenAfter(observed, written)
	again, err := render.Rerender(ctx, c, in, out)
	if err != nil {
		return out, false
	}
	return again, true
}

// mergePatch applies a JSON merge patch (RFC 7386) to dst in place: maps merge, null removes a
// field, anything else replaces it.
func mergePatch(dst, patch map[string]any) {
	for k, v := range patch {
		switch pv := v.(type) {
		case nil:
			delete(dst, k)
		case map[string]any:
			sub, ok := dst[k].(map[string]any)
			if !ok {
				sub = map[string]any{}
				dst[k] = sub
			}
			mergePatch(sub, pv)
		default:
			dst[k] = v
		}
	}
}
