package policytest

import (
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"metacel.dev/metacel/runtime/contract"
	"metacel.dev/metacel/runtime/render"
)

// unmarkedObserved reports, one message each, the observed objects a step's sync took for no
// child of the parent because they carry no mark of it and no desired child has their name
// (render.ForeignObject.Unmarked): offline such an object is never deleted, so in a test it is a
// mistake, most likely a misspelt name, which would otherwise pass unseen. Each message is at
// the line that gave the object, and names the children it may have meant: those of the previous
// step (before the first step: those the step desires).
func (e *env) unmarkedObserved(t *Test, s *Step, previous []*unstructured.Unstructured, got *outcome) []string {
	if got.res == nil || got.res.Observed == nil {
		return nil
	}
	var msgs []string
	for _, f := range got.res.Observed.Foreign {
		if !f.Unmarked {
			continue
		}
		msgs = append(msgs, fmt.Sprintf("%s (%s): observed %s %s %s is no child of the parent: %s; %s: correct its name, or label it %s for the sync to delete it",
			e.whereGiven(f.Object, t, s), s.Name, f.Object.GetAPIVersion(), f.Object.GetKind(), render.NamespacedName(f.Object), f.Why,
			childrenMeant(previous, got), contract.LabelChildID))
	}
	return msgs
}

// whereGiven locates the observed object obj in the test file: the last of the step's observed
// edits that is obj, else the test's observed object, else the step.
func (e *env) whereGiven(obj *unstructured.Unstructured, t *Test, s *Step) string {
	for _, objs := range []Objects{s.Observed, t.Observed} {
		for i := len(objs.Items) - 1; i >= 0; i-- {
			if len(matching([]*unstructured.Unstructured{obj}, objs.Items[i])) == 1 {
				return objs.Where[i]
			}
		}
	}
	return fmt.Sprintf("%s:%d: %s", e.file.Path, s.Line, s.Path)
}

// childrenMeant names the children an author may have meant: those of the previous step, or
// before the first step, those the step desires.
func childrenMeant(previous []*unstructured.Unstructured, got *outcome) string {
	what := "the children of the previous step are "
	objs := previous
	if objs == nil {
		what = "this step's children are "
		if got.res.Output != nil {
			for i := range got.res.Output.Children {
				objs = append(objs, got.res.Output.Children[i].Object)
			}
		}
	}
	if len(objs) == 0 {
		return strings.TrimSuffix(what, " are ") + " are none"
	}
	names := make([]string, len(objs))
	for i, o := range objs {
		names[i] = o.GetKind() + " " + render.NamespacedName(o)
	}
	return what + strings.Join(names, ", ")
}
