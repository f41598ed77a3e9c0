package render

import (
	"context"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	k8slabels "k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"metacel.dev/metacel/runtime/apply"
	"metacel.dev/metacel/runtime/contract"
	"metacel.dev/metacel/runtime/kinds"
	"metacel.dev/metacel/runtime/policy"
)

// Kinship decides whether an object is a parent's child under a policy, for every caller that
// asks: a render sorting the objects it observed (RenderObserved: the runtime's syncs, `metacel
// plan`, `metacel tree`, offline `metacel render`), the runtime's create that found a desired
// child's name taken (may it take the object over?) and the parent's finalizer (does it clean the
// object up?). It is built once per parent; each caller says, with the fields it sets and the
// Facts it passes, what it knows and which question it asks, and Judge applies one set of rules:
//
//  1. The object is of one of the policy's child resources (Resources).
//  2. metacel applied it, when that is known (Facts.Applied): labels and ownerReferences are
//     anyone's to write, never enough to make an object metacel's.
//  3. Its marks name the parent: its policy label (contract.ChildPolicy: metacel.dev/policy-name, or metacel.dev/policy before it), when set, names the policy; its
//     metacel.dev/parent-uid label, when set, holds the parent's UID; without that label (someone
//     removed it) its controller ownerReference, when set, names the parent; with neither, its
//     metacel.dev/policy and metacel.dev/child-id labels name the policy and the child asked about
//     (Facts.ChildID), unless who wrote it is unknown (an offline file, written by hand, may carry
//     no mark at all: rule 6 asks for one when it is undesired).
//  4. Garbage collection does not remove it with the parent, when only such objects are asked
//     about (ExceptCollected: the finalizer's question).
//  5. It is in a namespace the parent's children may be in (Reach).
//  6. The parent's record names it, or it has an ownerReference to the parent, when it is
//     undesired (Facts.Undesired; Record): one of a desired child's name metacel applies, and
//     records, anyway. Offline (Record not Checked: files, which no record names), an undesired
//     object must carry a mark of the parent instead: its metacel.dev/parent-uid label (rule 3
//     checked it names the parent), an ownerReference to it, metacel's managed fields, or the
//     labels metacel puts on a child (metacel.dev/child-id, or the policy label naming this
//     policy: what a test writes by hand for an old child). An object with none of them that no
//     desired child is, a file written by hand under a name the policy does not give (a misspelt
//     one), is never deleted: it is no child (Verdict.Unmarked), which `metacel render` notes and
//     `metacel test` reports as a mistake. The runtime and `metacel plan` always check the
//     record, so this never decides in a cluster.
//
// The rules a caller does not ask (Resources nil, Reach nil, Record not Checked) pass: it knows
// their answer already (a create's object is of the child's resource, in the namespace its
// render placed it in).
type Kinship struct {
	// Policy is the policy's name, which an object's metacel.dev/policy label must give.
	Policy string
	// Resources are the policy's child resources (nil: not asked); the resource of a kind that
	// none of them names is looked up with Mapper.
	Resources map[schema.GroupVersionResource]policy.ChildResourceInfo
	Mapper    kinds.Mapper
	// Parent is the parent asked about.
	Parent *unstructured.Unstructured
	// Reach judges the namespaces the parent's children may be in (nil: not asked).
	Reach *ChildReach
	// Record is the parent's record of its children without an ownerReference to it, asked of
	// undesired objects when Checked (the objects come from the cluster).
	Record ChildRecord
	// ExceptCollected: an object with an ownerReference to the parent is no child for this
	// question, garbage collection removes it with the parent. The finalizer's: it deletes only
	// what garbage collection cannot reach.
	ExceptCollected bool
}

// NewKinship returns the kinship of in.Parent's objects under policy c as a render judges them:
// of c's child resources (kinds looked up with in.Mapper), in the parent's reach
// (NewChildReach: in.Namespaces, in.ReservedNamespace, in.Budget) and, when in.CheckRecord, named
// by its record (RecordOf).
func NewKinship(ctx context.Context, c *policy.Compiled, in Input) *Kinship {
	return &Kinship{
		Policy: c.Name(), Resources: c.ChildResources, Mapper: in.Mapper, Parent: in.Parent,
		Reach: NewChildReach(ctx, c, in), Record: RecordOf(in.Parent, in.CheckRecord),
	}
}

// Applied is what is known of whether metacel applied an object, which its managed fields say.
type Applied int8

const (
	// AppliedUnknown: the caller does not say. A file given to `metacel render` says nothing of
	// who wrote it; the runtime's cache and `metacel plan` keep only the objects metacel applied
	// before they render.
	AppliedUnknown Applied = iota
	// AppliedByMetacel: its managed fields have metacel's entry (apply.AppliedBy).
	AppliedByMetacel
	// NotAppliedByMetacel: its managed fields have no entry of metacel's.
	NotAppliedByMetacel
	// AppliedAsManagedFieldsSay: the object is as the API server stores it (read live, or from a
	// cache that keeps managed fields), so Judge reads its managed fields (apply.AppliedBy):
	// AppliedByMetacel or NotAppliedByMetacel.
	AppliedAsManagedFieldsSay
)

// known returns what a is for obj: AppliedAsManagedFieldsSay read from its managed fields.
func (a Applied) known(obj *unstructured.Unstructured) Applied {
	switch {
	case a != AppliedAsManagedFieldsSay:
		return a
	case apply.AppliedBy(obj):
		return AppliedByMetacel
	}
	return NotAppliedByMetacel
}

// Facts are what a caller knows of one object, and the question it asks about it.
type Facts struct {
	// Applied is what is known of whether metacel applied the object.
	Applied Applied
	// ChildID is the desired child the object is asked about as, when there is one (a create
	// found its name taken): an object that has neither a parent-uid label nor a controller
	// ownerReference is that child only when metacel's labels name the policy and this child.
	ChildID string
	// Undesired: no desired child has the object's name, so the question is whether a sync
	// deletes or releases it, or the finalizer deletes it and waits for it; then the parent's
	// record must name it (Kinship.Record).
	Undesired bool
}

// Verdict is Kinship's answer about one object.
type Verdict struct {
	// Why says why the object is not the parent's child; "" when it is.
	Why string
	// Reason is set for an object that carries the parent's labels and is left alone anyway, to
	// be reported: contract.ReasonChildOutOfReach or contract.ReasonChildNotRecorded.
	Reason string
	// Unmarked: an offline object that no desired child is and that carries no mark of the
	// parent at all (rule 6), most likely given under a wrong name.
	Unmarked bool
}

// Child reports whether the object is the parent's child.
func (v Verdict) Child() bool { return v.Why == "" }

// Judge says whether obj is the parent's child, for the question f asks, and why not (the rules
// are Kinship's).
func (k *Kinship) Judge(obj *unstructured.Unstructured, f Facts) Verdict {
	f.Applied = f.Applied.known(obj)
	if why := k.unmarkedReason(obj, f); why != "" {
		return Verdict{Why: why}
	}
	if k.ExceptCollected && HasOwnerReference(obj, k.Parent) {
		return Verdict{Why: fmt.Sprintf("garbage collection deletes it with this %s (it has an ownerReference to it)", k.Parent.GetKind())}
	}
	if k.Reach != nil {
		if why := k.Reach.OutOfReach(obj); why != "" {
			return Verdict{Why: why, Reason: contract.ReasonChildOutOfReach}
		}
	}
	if f.Undesired {
		if why := k.Record.NotRecordedReason(obj); why != "" {
			return Verdict{Why: why, Reason: contract.ReasonChildNotRecorded}
		}
		if why := k.unmarkedFileReason(obj); why != "" {
			return Verdict{Why: why, Unmarked: true}
		}
	}
	return Verdict{}
}

// unmarkedFileReason says why an undesired offline object (Record not Checked) is no child: it
// carries no mark of the parent (rule 6 of Kinship), or "".
func (k *Kinship) unmarkedFileReason(obj *unstructured.Unstructured) string {
	labels := obj.GetLabels()
	_, policyName := contract.ChildPolicyLabel(k8slabels.Set(labels))
	if k.Record.Checked || labels[contract.LabelParentUID] != "" || labels[contract.LabelChildID] != "" || policyName != "" ||
		HasOwnerReference(obj, k.Parent) || apply.AppliedBy(obj) {
		return ""
	}
	return fmt.Sprintf("no desired child has its name, and it carries no mark of this %s (no %s or %s label, no ownerReference to it, no managed fields of metacel's): "+
		"offline, an object given by hand is deleted only when it carries one", k.Parent.GetKind(), contract.LabelParentUID, contract.LabelChildID)
}

// unmarkedReason says why obj is not the parent's by what it is and the marks it carries (rules
// 1 to 3 of Kinship), or "".
func (k *Kinship) unmarkedReason(obj *unstructured.Unstructured, f Facts) string {
	if k.Resources != nil {
		if gr := k.resourceOf(obj.GroupVersionKind()); !k.hasResource(gr) {
			return fmt.Sprintf("policy %q has no child resource %s", k.Policy, gr)
		}
	}
	if f.Applied == NotAppliedByMetacel {
		return "metacel did not apply it (its managed fields have no entry of metacel's)"
	}
	labels := obj.GetLabels()
	key, policyName := contract.ChildPolicyLabel(k8slabels.Set(labels))
	if policyName != "" && policyName != k.Policy {
		return fmt.Sprintf("its %s label names policy %q", key, policyName)
	}
	if uid := labels[contract.LabelParentUID]; uid != "" {
		if uid != string(k.Parent.GetUID()) {
			return fmt.Sprintf("its %s label names another parent (%s)", contract.LabelParentUID, uid)
		}
		return ""
	}
	if ref := metav1.GetControllerOfNoCopy(obj); ref != nil {
		if ref.UID != k.Parent.GetUID() {
			return fmt.Sprintf("its controller ownerReference names another owner (%s %s, %s)", ref.Kind, ref.Name, ref.UID)
		}
		return ""
	}
	if f.Applied == AppliedUnknown {
		return "" // a file written by hand
	}
	if id := labels[contract.LabelChildID]; policyName != k.Policy || id == "" || (f.ChildID != "" && id != f.ChildID) {
		return fmt.Sprintf("it has neither a %s label nor a controller ownerReference, and its %s and %s labels do not name policy %q and child %q",
			contract.LabelParentUID, contract.LabelChildPolicyName, contract.LabelChildID, k.Policy, f.ChildID)
	}
	return ""
}

// resourceOf returns the resource of a kind: the child resource of that kind when the policy
// knows the kind (it was not guessed), else what Mapper says.
func (k *Kinship) resourceOf(gvk schema.GroupVersionKind) schema.GroupResource {
	for gvr, r := range k.Resources {
		if !r.Guessed && r.Kind == gvk.Kind && gvr.Group == gvk.Group && gvr.Version == gvk.Version {
			return gvr.GroupResource()
		}
	}
	return kinds.LookupKind(k.Mapper, gvk).GVR.GroupResource()
}

// hasResource reports whether gr is one of the policy's child resources, in any version.
func (k *Kinship) hasResource(gr schema.GroupResource) bool {
	for gvr := range k.Resources {
		if gvr.GroupResource() == gr {
			return true
		}
	}
	return false
}
