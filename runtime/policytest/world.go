package policytest

import (
	"fmt"
	"reflect"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	"metacel.dev/metacel/runtime/decide"
	"metacel.dev/metacel/runtime/kinds"
	"metacel.dev/metacel/runtime/render"
)

// edit applies a step's changes to the world: a merge patch of the parent (its generation goes up
// when anything but metadata and status changes, as the API server does), and related and observed
// objects changed (merged into the object of the same kind and name) or added.
func (w *world) edit(e *env, s *Step) error {
	if s.ParentPatch != nil {
		before := w.parent.DeepCopy()
		mergePatch(w.parent.Object, s.ParentPatch)
		if specChanged(before.Object, w.parent.Object) && w.parent.GetGeneration() > 0 {
			w.parent.SetGeneration(w.parent.GetGeneration() + 1)
		}
	}
	var err error
	if w.related, err = upsert(w.related, s.Related, w.parent.GetNamespace(), e.mapper); err != nil {
		return err
	}
	w.observed, err = upsert(w.observed, s.Observed, w.parent.GetNamespace(), e.mapper)
	return err
}

// specChanged reports whether two versions of an object differ outside metadata and status.
func specChanged(a, b map[string]any) bool {
	strip := func(m map[string]any) map[string]any {
		out := make(map[string]any, len(m))
		for k, v := range m {
			if k != "metadata" && k != "status" {
				out[k] = v
			}
		}
		return out
	}
	return !reflect.DeepEqual(strip(a), strip(b))
}

// upsert merges each edit into the object of the same group, kind, name and (when the edit gives
// one) namespace, or adds it, in the parent's namespace when its kind is namespaced and it names
// none.
func upsert(objs []*unstructured.Unstructured, edits Objects, parentNS string, m kinds.Mapper) ([]*unstructured.Unstructured, error) {
	for i, edit := range edits.Items {
		matches := matching(objs, edit)
		switch len(matches) {
		case 0:
			obj := edit.DeepCopy()
			if obj.GetNamespace() == "" && kinds.LookupKind(m, obj.GroupVersionKind()).Namespaced {
				obj.SetNamespace(parentNS)
			}
			objs = append(objs, obj)
		case 1:
			mergePatch(matches[0].Object, runtime.DeepCopyJSON(edit.Object))
		default:
			return nil, fmt.Errorf("%s: %s %s is in %d namespaces: give metadata.namespace", edits.Where[i], edit.GetKind(), edit.GetName(), len(matches))
		}
	}
	return objs, nil
}

func matching(objs []*unstructured.Unstructured, edit *unstructured.Unstructured) []*unstructured.Unstructured {
	var out []*unstructured.Unstructured
	gk := edit.GroupVersionKind().GroupKind()
	for _, o := range objs {
		if o.GroupVersionKind().GroupKind() == gk && o.GetName() == edit.GetName() &&
			(edit.GetNamespace() == "" || o.GetNamespace() == edit.GetNamespace()) {
			out = append(out, o)
		}
	}
	return out
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
			dst[k] = runtime.DeepCopyJSONValue(v)
		}
	}
}

// advance moves the world past a sync: the parent gets the status the sync wrote; the observed
// children become what the sync's writes leave (decide.Written, as the status saw them: an
// updated child keeps what the policy does not set, its status say; a created or recreated one
// is the desired object alone; one up to date or OnDelete stays as it was; one deleted or
// released is gone); other objects stay. The children are kept apart too, for messages.
func (w *world) advance(got *outcome) {
	if got.res == nil {
		return
	}
	if got.res.Parent != nil {
		w.parent = got.res.Parent.DeepCopy()
	}
	if got.err != nil || got.res.Output == nil {
		return
	}
	var next []*unstructured.Unstructured
	for _, f := range got.res.Observed.Foreign {
		next = append(next, f.Object.DeepCopy())
	}
	w.children = []*unstructured.Unstructured{}
	after := decide.ChildrenAfter(got.res.Observed.ByID, decide.Written(got.res.Steps))
	for i := range got.res.Output.Children {
		child := &got.res.Output.Children[i]
		if obj := render.FindSame(after[child.ID], child.Object); obj != nil {
			obj = obj.DeepCopy()
			next = append(next, obj)
			w.children = append(w.children, obj)
		}
	}
	w.observed = next
}
