package plan

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"metacel.dev/metacel/runtime/decide"
	"metacel.dev/metacel/runtime/kinds"
	"metacel.dev/metacel/runtime/policy"
	"metacel.dev/metacel/runtime/preview"
	"metacel.dev/metacel/runtime/render"
)

// planParent syncs one parent offline under both versions, lists what the candidate would
// change, and has the API server check its writes.
func planParent(ctx context.Context, in Input, w *world, parent *unstructured.Unstructured) Parent {
	out := Parent{APIVersion: parent.GetAPIVersion(), Kind: parent.GetKind(), Namespace: parent.GetNamespace(), Name: parent.GetName()}
	listed := parent
	parent, err := w.atVersion(ctx, in.Candidate, listed)
	if err != nil {
		out.Error = err.Error()
		return out
	}
	var replaced *policy.Compiled // the version the candidate replaces on the same parents
	if in.Running != nil && in.Running.Parent.GVR.GroupResource() == in.Candidate.Parent.GVR.GroupResource() {
		replaced = in.Running
	}
	cand, err := w.sync(ctx, in.Candidate, replaced, parent)
	if err != nil {
		out.Error = preview.ErrorText(err)
		return out
	}
	var running *preview.Result
	if replaced != nil {
		if old, err := w.atVersion(ctx, replaced, listed); err == nil {
			running, _ = w.sync(ctx, replaced, nil, old) // a failing running version has nothing to compare
		}
	}
	out.Children = childChanges(in, cand, running)
	out.Status = statusChanges(parent, cand, running)
	out.Readiness = readinessByKind(in.Running, parent, running)
	out.Error = dryRun(ctx, in.Client, parent, out.Children)
	return out
}

// childChanges lists what the sync of the candidate would write, as the runtime decides it
// (package decide, through preview): its steps (created, updated, recreated, bookkeeping patched; deleted or released
// when no longer desired, a deletion held back by the children's order included, with what it
// waits for), then the children of resources the candidate dropped, deleted or released.
func childChanges(in Input, cand, running *preview.Result) []Change {
	var out []Change
	for _, st := range cand.Steps {
		switch st.Action {
		case decide.Create:
			out = append(out, created(in, st.Child, desiredBy(running, st.Child.Object)))
		case decide.Recreate:
			out = append(out, changed(decide.Recreate, st.Child, desiredBy(running, st.Child.Object), "its resource's updateStrategy is Recreate: deleted, then created anew"))
		case decide.Update:
			out = append(out, changed(decide.Update, st.Child, desiredBy(running, st.Child.Object), st.Why))
		case decide.UpdateBookkeeping:
			out = append(out, bookkept(st))
		case decide.Delete, decide.Release:
			out = append(out, removed(in, st.Observed, "no longer desired"))
		case decide.Wait: // deleted by a later sync, once what waits for it is gone
			out = append(out, newChange(decide.Delete, st.Observed, st.Why))
		}
	}
	for _, f := range cand.Observed.Foreign {
		// one with a reason carries the parent's labels and is left alone (ChildOutOfReach,
		// ChildNotRecorded): the runtime reports it, and neither deletes nor releases it
		if f.Object.GetDeletionTimestamp() == nil && f.Reason == "" {
			gr := kinds.LookupKind(in.Mapper, f.Object.GroupVersionKind()).GVR.GroupResource()
			out = append(out, removed(in, f.Object, fmt.Sprintf("the policy no longer lists its resource %s", gr)))
		}
	}
	return out
}

// desiredBy returns the child of the running version's render that is obj (Identity), or nil.
func desiredBy(running *preview.Result, obj *unstructured.Unstructured) *unstructured.Unstructured {
	if running == nil || running.Output == nil {
		return nil
	}
	for i := range running.Output.Children {
		if render.Identity(running.Output.Children[i].Object) == render.Identity(obj) {
			return running.Output.Children[i].Object
		}
	}
	return nil
}

// created is the creation of a missing child.
func created(in Input, child *render.Child, before *unstructured.Unstructured) Change {
	why := "a new child"
	switch {
	case in.Running == nil:
		why = "a new child: the policy does not run yet"
	case before != nil:
		why = "missing, and the running version wants it too (deleted, or not created yet)"
	}
	c := newChange(decide.Create, child.Object, why)
	c.desired, c.gvr = child.Object, child.Resource.GVR
	return c
}

// changed is the update or recreation of a child that differs, with the fields the candidate
// changes of what the running version desires.
func changed(action decide.Action, child *render.Child, before *unstructured.Unstructured, why string) Change {
	c := newChange(action, child.Object, why)
	c.desired, c.gvr, c.Disruptive = child.Object, child.Resource.GVR, action == decide.Recreate
	if before == nil {
		c.Why += "; the running version does not desire it"
		return c
	}
	if c.Fields = diff(before.Object, child.Object.Object); len(c.Fields) == 0 {
		c.Why += "; the running version wants the same (drift, or not synced yet)"
	}
	return c
}

// bookkept is the patch of a child's bookkeeping alone (decide.UpdateBookkeeping), dry-run as
// the runtime sends it.
func bookkept(st decide.Step) Change {
	c := newChange(decide.UpdateBookkeeping, st.Observed, st.Why)
	c.observed, c.patch, c.gvr = st.Observed, st.Bookkeeping.Patch(), st.Child.Resource.GVR
	return c
}

// removed is the deletion, or release by its deletionPolicy, of a child no longer desired, as
// the runtime decides it: what the child records, else its entry in the candidate, then in the
// running version.
func removed(in Input, obj *unstructured.Unstructured, why string) Change {
	action := decide.Delete
	if render.DeletionPolicyOf(obj, in.Candidate, in.Running) == policy.DeletionOrphan {
		action, why = decide.Release, why+", deletionPolicy Orphan"
	}
	return newChange(action, obj, why)
}

func newChange(action decide.Action, obj *unstructured.Unstructured, why string) Change {
	return Change{Action: action, APIVersion: obj.GetAPIVersion(), Kind: obj.GetKind(), Namespace: obj.GetNamespace(), Name: obj.GetName(), Why: why}
}

// statusChanges lists the fields of the parent's status that the candidate computes otherwise
// than the running version (or than the live status, for a new policy). Transition times are left
// out: an offline sync has no clock.
func statusChanges(parent *unstructured.Unstructured, cand, running *preview.Result) []FieldChange {
	before := parent
	if running != nil && running.Parent != nil {
		before = running.Parent
	}
	return diff(untimedStatus(before), untimedStatus(cand.Parent))
}

// readinessByKind is how the parent's Ready condition changes because children with no readyWhen
// are judged by their kind (runtime/readiness; a runtime before it called them ready once they
// existed): the live condition, which the runtime running now wrote, against the one the running
// version computes with this metacel. nil when they agree or when no child of the running version
// goes without a readyWhen: a change that is the candidate's own is in Status.
func readinessByKind(c *policy.Compiled, parent *unstructured.Unstructured, running *preview.Result) *FieldChange {
	if running == nil || running.Parent == nil || !judgesAChildByKind(c) {
		return nil
	}
	live, now := readyCondition(parent), readyCondition(running.Parent)
	if live == nil || now == nil || live["status"] == now["status"] {
		return nil
	}
	return &FieldChange{Path: "status.conditions[type=Ready]", Old: live, New: now}
}

// judgesAChildByKind reports whether a child entry of the policy has no readyWhen.
func judgesAChildByKind(c *policy.Compiled) bool {
	for _, ch := range c.Policy.Spec.Children {
		if ch.ReadyWhen == "" {
			return true
		}
	}
	return false
}

// readyCondition is the parent's Ready condition without its transition time; nil when it has none.
func readyCondition(obj *unstructured.Unstructured) map[string]any {
	conds, _ := untimedStatus(obj)["conditions"].([]any)
	for _, c := range conds {
		if m, ok := c.(map[string]any); ok && m["type"] == "Ready" {
			return map[string]any{"status": m["status"], "reason": m["reason"], "message": m["message"]}
		}
	}
	return nil
}

// untimedStatus is a copy of an object's status without its conditions' lastTransitionTime.
func untimedStatus(obj *unstructured.Unstructured) map[string]any {
	status, _, _ := unstructured.NestedMap(obj.Object, "status")
	conds, _ := status["conditions"].([]any)
	for _, c := range conds {
		if m, ok := c.(map[string]any); ok {
			delete(m, "lastTransitionTime")
		}
	}
	return status
}

// sortedKeys returns a map's resources in a stable order.
func sortedKeys[V any](m map[schema.GroupVersionResource]V) []schema.GroupVersionResource {
	return slices.SortedFunc(maps.Keys(m), func(a, b schema.GroupVersionResource) int { return strings.Compare(a.String(), b.String()) })
}
