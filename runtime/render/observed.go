package render

import (
	"context"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"metacel.dev/metacel/runtime/contract"
	"metacel.dev/metacel/runtime/expr"
	"metacel.dev/metacel/runtime/policy"
)

// ObservedChildren sorts the objects found for a parent the way the runtime and `metacel render`
// both must, so that the status, readiness, apply and prune of one sync all see the same objects.
type ObservedChildren struct {
	// ByID holds, by child id, the observed objects that are desired children (same group, kind,
	// namespace and name as a child of the Output): what the render was given as Input.Observed.
	ByID map[string][]*unstructured.Unstructured
	// Undesired are the parent's children that no desired child is: a sync deletes them, or
	// releases them when their deletionPolicy is Orphan.
	Undesired []*unstructured.Unstructured
	// Foreign are the objects given that are not the parent's children at all.
	Foreign []ForeignObject
}

// ForeignObject is an object that is not the parent's child, and why.
type ForeignObject struct {
	Object *unstructured.Unstructured
	Why    string
	// Reason is set for an object that carries the parent's labels and is ignored anyway:
	// contract.ReasonChildOutOfReach or contract.ReasonChildNotRecorded.
	Reason string
	// Unmarked: an offline object that carries no mark of the parent and that no desired child
	// is (Verdict.Unmarked).
	Unmarked bool
}

// RenderObserved renders a parent with its observed children, each bound to the desired child it
// is: `children.<id>` and readyWhen see an object only when it has the group, kind, namespace and
// name of a child the render desires, and it is this parent's child (Kinship, NewKinship): of a
// child resource, marked as the parent's and in a namespace its children may be in. An object
// under an old name, in another namespace or of another parent feeds neither the status nor
// readiness; one out of reach is not even undesired (a sync would delete it): it is foreign. So
// is an undesired object without an ownerReference to the parent that the parent's record does
// not name, when in.CheckRecord (ChildRecord), and, offline, an undesired object that carries no
// mark of the parent at all (ForeignObject.Unmarked). Whether metacel applied an object is not asked
// here (AppliedUnknown): the runtime's cache and `metacel plan` keep only the objects it applied,
// and an offline file does not say.
//
// objs are the candidates: in a cluster, the parent's children found through the parent-uid index;
// offline, whatever objects were given. in.Observed is ignored. Which desired child an object is
// is known only once the children are rendered, so a first render binds each object by its
// metacel.dev/child-id label; when that guess differs from the match (an object no longer
// desired, or unlabelled), a second render runs with the match. The first render spends from a
// copy of the budget that is kept only when no second render follows. The returned
// ObservedChildren are matched against the Output returned.
func RenderObserved(ctx context.Context, c *policy.Compiled, in Input, objs []*unstructured.Unstructured) (*Output, *ObservedChildren, error) {
	if in.Budget == nil {
		in.Budget = expr.NewBudget()
	}
	kin := NewKinship(ctx, c, in)
	owned, foreign := kin.split(objs, nil, false)
	first, spent := in, *in.Budget
	first.Observed, first.Budget = byChildIDLabel(owned), &spent
	out, err := Render(ctx, c, first)
	if err != nil {
		*in.Budget = *first.Budget
		return nil, &ObservedChildren{Foreign: foreign}, err
	}
	byID, undesired := matchDesired(out, owned)
	if sameBinding(first.Observed, byID) {
		*in.Budget = *first.Budget
		undesired, foreign = kin.split(undesired, foreign, true)
		return out, &ObservedChildren{ByID: byID, Undesired: undesired, Foreign: foreign}, nil
	}
	in.Observed = byID
	if out, err = Render(ctx, c, in); err != nil {
		return nil, &ObservedChildren{Foreign: foreign}, err
	}
	byID, undesired = matchDesired(out, owned)
	undesired, foreign = kin.split(undesired, foreign, true)
	return out, &ObservedChildren{ByID: byID, Undesired: undesired, Foreign: foreign}, nil
}

// split keeps the objects that are the parent's children (Judge, knowing nothing of who applied
// them), and adds the others to foreign: first those that are no child at all, then those that
// carry the parent's labels and are left alone anyway (Verdict.Reason), each in the order given.
// Before the match, an object may yet be a desired child's (undesired false): its record is not
// asked; after it, the undesired objects are asked again, the record too.
func (k *Kinship) split(objs []*unstructured.Unstructured, foreign []ForeignObject, undesired bool) ([]*unstructured.Unstructured, []ForeignObject) {
	var kept []*unstructured.Unstructured
	var ignored []ForeignObject
	for _, obj := range objs {
		v := k.Judge(obj, Facts{Applied: AppliedUnknown, Undesired: undesired})
		switch {
		case v.Child():
			kept = append(kept, obj)
		case v.Reason == "":
			foreign = append(foreign, ForeignObject{Object: obj, Why: v.Why, Unmarked: v.Unmarked})
		default:
			ignored = append(ignored, ForeignObject{Object: obj, Why: v.Why, Reason: v.Reason})
		}
	}
	return kept, append(foreign, ignored...)
}

// byChildIDLabel binds each object to the child id its label names; unlabelled objects are left
// out until the match knows which child they are.
func byChildIDLabel(objs []*unstructured.Unstructured) map[string][]*unstructured.Unstructured {
	out := map[string][]*unstructured.Unstructured{}
	for _, obj := range objs {
		if id := obj.GetLabels()[contract.LabelChildID]; id != "" {
			out[id] = append(out[id], obj)
		}
	}
	return out
}

// matchDesired binds each object to the desired child it is (by Identity, whatever its child-id
// label says), and the children of an entry that waits (Output.Held) to that entry, by their
// child-id label; the others are undesired.
func matchDesired(out *Output, objs []*unstructured.Unstructured) (map[string][]*unstructured.Unstructured, []*unstructured.Unstructured) {
	idOf := make(map[string]string, len(out.Children))
	for i := range out.Children {
		idOf[Identity(out.Children[i].Object)] = out.Children[i].ID
	}
	held := make(map[string]bool, len(out.Held))
	for _, h := range out.Held {
		held[h.ID] = true
	}
	byID := map[string][]*unstructured.Unstructured{}
	var undesired []*unstructured.Unstructured
	for _, obj := range objs {
		if id, ok := idOf[Identity(obj)]; ok {
			byID[id] = append(byID[id], obj)
		} else if id := obj.GetLabels()[contract.LabelChildID]; held[id] {
			byID[id] = append(byID[id], obj) // an entry that waits keeps its children as they are
		} else {
			undesired = append(undesired, obj)
		}
	}
	return byID, undesired
}

// sameBinding reports whether two bindings hold the same objects under the same ids.
func sameBinding(a, b map[string][]*unstructured.Unstructured) bool {
	count := func(m map[string][]*unstructured.Unstructured) int {
		n := 0
		for _, objs := range m {
			n += len(objs)
		}
		return n
	}
	if count(a) != count(b) {
		return false
	}
	for id, objs := range b {
		in := make(map[*unstructured.Unstructured]bool, len(a[id]))
		for _, o := range a[id] {
			in[o] = true
		}
		for _, o := range objs {
			if !in[o] {
				return false
			}
		}
	}
	return true
}

// DeletionPolicyOf says what becomes of a child no longer desired: what the child records (its
// entry said Orphan when it was applied); else what its entry says in the first of versions (a
// policy, then the one it replaces; nil ones are skipped) that has it; else it is deleted.
func DeletionPolicyOf(obj *unstructured.Unstructured, versions ...*policy.Compiled) policy.DeletionPolicy {
	if obj.GetAnnotations()[contract.AnnotationDeletionPolicy] == string(policy.DeletionOrphan) {
		return policy.DeletionOrphan
	}
	id := obj.GetLabels()[contract.LabelChildID]
	for _, p := range versions {
		if p == nil {
			continue
		}
		for _, ch := range p.Children {
			if ch.ID == id {
				return ch.DeletionPolicy
			}
		}
	}
	return policy.DeletionDelete
}
