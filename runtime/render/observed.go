package render

import (
	"context"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"metacel.dev/metacel/runtime/contract"
	"metacel.dev/metacel/runtime/expr"
	"metacel.dev/metacel/runtime/kinds"
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
}

// RenderObserved renders a parent with its observed children, each bound to the desired child it
// is: `children.<id>` and readyWhen see an object only when it has the group, kind, namespace and
// name of a child the render desires, and it is this parent's (notChildReason) in a namespace its
// children may be in (ChildReach). An object under an old name, in another namespace or of another
// parent feeds neither the status nor readiness; one out of reach is not even undesired (a sync
// would delete it): it is foreign. So is an undesired object without an ownerReference to the
// parent that the parent's record does not name, when in.CheckRecord (ChildRecord).
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
	owned, foreign := splitOwned(c, in.Parent, in.Mapper, objs)
	owned, foreign = splitReached(NewChildReach(ctx, c, in), owned, foreign)
	first := in
	first.Observed, first.Budget = byChildIDLabel(owned), in.Budget.Copy()
	out, err := Render(ctx, c, first)
	if err != nil {
		*in.Budget = *first.Budget
		return nil, &ObservedChildren{Foreign: foreign}, err
	}
	record := RecordOf(in.Parent, in.CheckRecord)
	byID, undesired := matchDesired(out, owned)
	if sameBinding(first.Observed, byID) {
		*in.Budget = *first.Budget
		undesired, foreign = splitRecorded(record, undesired, foreign)
		return out, &ObservedChildren{ByID: byID, Undesired: undesired, Foreign: foreign}, nil
	}
	in.Observed = byID
	if out, err = Render(ctx, c, in); err != nil {
		return nil, &ObservedChildren{Foreign: foreign}, err
	}
	byID, undesired = matchDesired(out, owned)
	undesired, foreign = splitRecorded(record, undesired, foreign)
	return out, &ObservedChildren{ByID: byID, Undesired: undesired, Foreign: foreign}, nil
}

// splitRecorded moves the undesired objects that the parent's record does not name
// (ChildRecord) from undesired to foreign: a sync would delete them, or the finalizer wait for
// them, on the word of labels anyone may set. A desired child's object stays bound: metacel
// applies it (it applied it before, its managed fields say) and records it.
func splitRecorded(r ChildRecord, undesired []*unstructured.Unstructured, foreign []ForeignObject) ([]*unstructured.Unstructured, []ForeignObject) {
	return split(undesired, foreign, contract.ReasonChildNotRecorded, r.NotRecordedReason)
}

// notChildReason says why obj is not a child of parent under policy c, or "" when it may be: its
// resource must be one of the policy's child resources; its policy label (contract.ChildPolicy), when set,
// must name the policy; its metacel.dev/parent-uid label, when set, must hold the parent's UID, and
// without that label its controller ownerReference, when set, must name the parent. An object
// with none of these marks (written by hand for an offline render) may be the parent's child.
// Whether metacel applied it (its managed fields) is the caller's to check: the runtime's cache
// knows, an offline file does not say.
func notChildReason(c *policy.Compiled, parent *unstructured.Unstructured, m kinds.Mapper, obj *unstructured.Unstructured) string {
	var gr schema.GroupResource
	if res, ok := c.ChildResourceOfKind(obj.GroupVersionKind()); ok {
		gr = res.GVR.GroupResource()
	} else {
		gr = kinds.LookupKind(m, obj.GroupVersionKind()).GVR.GroupResource()
	}
	if !hasChildResource(c, gr) {
		return fmt.Sprintf("policy %q has no child resource %s", c.Name(), gr)
	}
	labels := obj.GetLabels()
	if key, p := contract.ChildPolicyLabel(labels); p != "" && p != c.Name() {
		return fmt.Sprintf("its %s label names policy %q", key, p)
	}
	if uid := labels[contract.LabelParentUID]; uid != "" {
		if uid != string(parent.GetUID()) {
			return fmt.Sprintf("its %s label names another parent (%s)", contract.LabelParentUID, uid)
		}
		return ""
	}
	if ref := metav1.GetControllerOfNoCopy(obj); ref != nil && ref.UID != parent.GetUID() {
		return fmt.Sprintf("its controller ownerReference names another owner (%s %s, %s)", ref.Kind, ref.Name, ref.UID)
	}
	return ""
}

func hasChildResource(c *policy.Compiled, gr schema.GroupResource) bool {
	for gvr := range c.ChildResources {
		if gvr.GroupResource() == gr {
			return true
		}
	}
	return false
}

// splitOwned separates the parent's children from the other objects.
func splitOwned(c *policy.Compiled, parent *unstructured.Unstructured, m kinds.Mapper, objs []*unstructured.Unstructured) ([]*unstructured.Unstructured, []ForeignObject) {
	return split(objs, nil, "", func(obj *unstructured.Unstructured) string { return notChildReason(c, parent, m, obj) })
}

// splitReached moves the objects in namespaces the parent's children may not be in (ChildReach)
// from owned to foreign: their labels are anyone's to set.
func splitReached(reach *ChildReach, owned []*unstructured.Unstructured, foreign []ForeignObject) ([]*unstructured.Unstructured, []ForeignObject) {
	return split(owned, foreign, contract.ReasonChildOutOfReach, reach.OutOfReach)
}

// split keeps the objects for which why says nothing, and adds the others to foreign with why's
// answer and reason.
func split(objs []*unstructured.Unstructured, foreign []ForeignObject, reason string, why func(*unstructured.Unstructured) string) ([]*unstructured.Unstructured, []ForeignObject) {
	var kept []*unstructured.Unstructured
	for _, obj := range objs {
		if w := why(obj); w != "" {
			foreign = append(foreign, ForeignObject{Object: obj, Why: w, Reason: reason})
			continue
		}
		kept = append(kept, obj)
	}
	return kept, foreign
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
// label says); the others are undesired.
func matchDesired(out *Output, objs []*unstructured.Unstructured) (map[string][]*unstructured.Unstructured, []*unstructured.Unstructured) {
	idOf := make(map[string]string, len(out.Children))
	for i := range out.Children {
		idOf[Identity(out.Children[i].Object)] = out.Children[i].ID
	}
	byID := map[string][]*unstructured.Unstructured{}
	var undesired []*unstructured.Unstructured
	for _, obj := range objs {
		if id, ok := idOf[Identity(obj)]; ok {
			byID[id] = append(byID[id], obj)
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
