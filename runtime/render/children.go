package render

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"maps"
	"slices"
	"strconv"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation"

	"metacel.dev/metacel/runtime/contract"
	"metacel.dev/metacel/runtime/expr"
	"metacel.dev/metacel/runtime/hashslot"
	"metacel.dev/metacel/runtime/jsonenc"
	"metacel.dev/metacel/runtime/kinds"
	"metacel.dev/metacel/runtime/policy"
	"metacel.dev/metacel/runtime/readiness"
)

// buildChildren evaluates every child entry in the policy's order (each after the children it
// waits for), and finishes each object. An entry whose children would read a child that does not
// exist yet, or is not ready yet when they read its status, is held: not evaluated, its existing
// children kept as they are (Output.Held).
func (r *run) buildChildren() ([]Child, error) {
	var out []Child
	seen := map[string]string{}
	built := map[string][]Child{}
	for _, i := range r.order() {
		ch := &r.c.Children[i]
		why := r.heldBefore(ch.ID)
		if why == "" {
			why = r.waitsFor(ch, built)
		}
		if why != "" {
			r.held = append(r.held, Held{ID: ch.ID, Why: why})
			continue
		}
		objs, err := r.evalChild(ch)
		if err != nil {
			return nil, err
		}
		for _, obj := range objs {
			if len(out) >= policy.MaxChildrenPerParent {
				return nil, childError(ch.Path, "more than %d children for one parent: split the parent or narrow the forEach", policy.MaxChildrenPerParent)
			}
			child, err := r.finish(ch, obj)
			if err != nil {
				return nil, err
			}
			if isParent(child.Object, r.in.Parent) {
				return nil, childError(ch.Path, "the child %s %s is the parent itself: give it another name (or put it in another namespace)",
					child.Object.GetKind(), NamespacedName(child.Object))
			}
			key := child.Resource.GVR.String() + " " + child.Object.GetNamespace() + "/" + child.Object.GetName()
			if first, dup := seen[key]; dup {
				return nil, childError(ch.Path, "two children are the same object %s %s (also from %s): give them distinct names",
					child.Object.GetKind(), NamespacedName(child.Object), first)
			}
			seen[key] = ch.Path
			out = append(out, child)
			built[ch.ID] = append(built[ch.ID], child)
		}
	}
	return out, nil
}

// isParent reports whether a child is the parent (the same group, kind, namespace and name): it
// would find its name taken by the parent at every sync (ChildConflict).
func isParent(child, parent *unstructured.Unstructured) bool {
	return child.GetName() == parent.GetName() && child.GetNamespace() == parent.GetNamespace() &&
		child.GroupVersionKind().GroupKind() == parent.GroupVersionKind().GroupKind()
}

// heldBefore is why the input holds the entry (Input.Hold), "" when it does not.
func (r *run) heldBefore(id string) string {
	for _, h := range r.in.Hold {
		if h.ID == id {
			return h.Why
		}
	}
	return ""
}

// order is the order the entries are evaluated and applied in: the policy's (policy.Compiled.Order).
func (r *run) order() []int {
	if len(r.c.Order) == len(r.c.Children) {
		return r.c.Order
	}
	order := make([]int, len(r.c.Children)) // a policy compiled without one
	for i := range order {
		order[i] = i
	}
	return order
}

// waitsFor says what an entry waits for before it is evaluated ("" when nothing): an entry it
// waits for that is held itself (the wait carries down a chain: c after b after a), or a child of
// one that does not exist yet, or is not ready yet when it waits for readiness. An entry that
// gives no child is not waited for: what reads it sees it absent.
func (r *run) waitsFor(ch *policy.CompiledChild, built map[string][]Child) string {
	for _, dep := range ch.After {
		if r.isHeld(dep.ID) {
			return fmt.Sprintf("after %s, which waits itself: %s", dep.ID, dep.Why)
		}
		for _, kid := range built[dep.ID] {
			obs := r.observedByIdentity()[Identity(kid.Object)]
			if obs == nil || obs.GetDeletionTimestamp() != nil {
				return fmt.Sprintf("after %s exists: %s", childName(kid.Object), dep.Why)
			}
			if !dep.Ready || dep.Named && boundByItsConsumer(kid.Object) {
				continue
			}
			judged := kid
			if err := r.judge(&judged, obs); err != nil {
				return fmt.Sprintf("after %s is ready: %s; %v", childName(kid.Object), dep.Why, err)
			}
			if !judged.Ready {
				return fmt.Sprintf("after %s is ready: %s; %s", childName(kid.Object), dep.Why, judged.NotReadyBecause)
			}
		}
	}
	return ""
}

// boundByItsConsumer reports whether obj is a PersistentVolumeClaim, which an entry whose
// dependsOn names it (and that reads nothing of its status) waits for only to exist: a claim of a WaitForFirstConsumer StorageClass (most
// clouds' default) binds only once a Pod that uses it is scheduled, so waiting for it to be bound
// would hold that Pod for ever; and a Pod whose claim is not bound yet is not started by
// Kubernetes. The parent's Ready still waits for the claim to be bound.
func boundByItsConsumer(obj *unstructured.Unstructured) bool {
	gvk := obj.GroupVersionKind()
	return gvk.Group == "" && gvk.Kind == "PersistentVolumeClaim"
}

// isHeld reports whether the entry of that id is held in this render.
func (r *run) isHeld(id string) bool {
	return slices.ContainsFunc(r.held, func(h Held) bool { return h.ID == id })
}

// evalChild evaluates one child entry into zero or more objects.
func (r *run) evalChild(ch *policy.CompiledChild) ([]any, error) {
	if ch.IncludeWhen != nil {
		ok, err := ch.IncludeWhen.EvalBool(r.ctx, r.act, r.budget)
		if err != nil {
			return nil, evalError(ch.Path+".includeWhen", err)
		}
		if !ok {
			r.excluded = append(r.excluded, fmt.Sprintf("%s: includeWhen %q is false", ch.ID, ch.IncludeWhen.Source))
			return nil, nil
		}
	}
	if ch.ForEach == nil {
		return r.evalObjects(ch, r.act)
	}
	items, err := ch.ForEach.EvalNative(r.ctx, r.act, r.budget)
	if err != nil {
		return nil, evalError(ch.Path+".forEach", err)
	}
	list, _ := items.([]any)
	if len(list) > policy.MaxChildrenPerParent {
		return nil, childError(ch.Path+".forEach", "gives %d items, more than the %d children one parent may have", len(list), policy.MaxChildrenPerParent)
	}
	if len(list) == 0 {
		r.excluded = append(r.excluded, fmt.Sprintf("%s: forEach %q gave no item", ch.ID, ch.ForEach.Source))
	}
	var out []any
	for _, item := range list {
		objs, err := r.evalObjects(ch, expr.Extend(r.act, map[string]any{"each": item}))
		if err != nil {
			return nil, err
		}
		out = append(out, objs...)
	}
	return out, nil
}

// evalObjects evaluates a child's template or expression.
func (r *run) evalObjects(ch *policy.CompiledChild, act expr.Activation) ([]any, error) {
	if ch.Template != nil {
		obj, err := ch.Template.Eval(r.ctx, act, r.budget)
		if err != nil {
			return nil, evalError(ch.Path+".template", err)
		}
		return []any{obj}, nil
	}
	v, err := ch.Expression.EvalNative(r.ctx, act, r.budget)
	if err != nil {
		return nil, evalError(ch.Path+".expression", err)
	}
	if list, ok := v.([]any); ok {
		return list, nil
	}
	return []any{v}, nil
}

// finish checks one evaluated object and completes it as a child: kind allowed, namespace
// defaulted and checked, labels and ownerReference added, a built-in kind in its stored form.
func (r *run) finish(ch *policy.CompiledChild, v any) (Child, error) {
	m, ok := v.(map[string]any)
	if !ok {
		return Child{}, childError(ch.Path, "must produce an object, got %T", v)
	}
	obj := &unstructured.Unstructured{Object: m}
	gvk := obj.GroupVersionKind()
	if obj.GetAPIVersion() == "" || gvk.Kind == "" {
		return Child{}, childError(ch.Path, "the object needs apiVersion and kind")
	}
	if obj.GetName() == "" {
		return Child{}, childError(ch.Path, "%s needs metadata.name (children must have stable names)", gvk.Kind)
	}
	res, err := r.allowed(ch, gvk)
	if err != nil {
		return Child{}, err
	}
	if err := reserved(ch, obj); err != nil {
		return Child{}, err
	}
	owned, err := r.place(ch, obj, res.Info)
	if err != nil {
		return Child{}, err
	}
	if err := r.checkNotReserved(ch, obj); err != nil {
		return Child{}, err
	}
	if err := r.checkChildReach(r.ctx, ch, obj); err != nil {
		return Child{}, err
	}
	// an Orphan child outlives its parent: an ownerReference would have the garbage collector
	// delete it with the parent, so the parent's finalizer releases it instead
	owned = owned && ch.DeletionPolicy != policy.DeletionOrphan
	legacyHeld := r.legacyHeld(obj)
	r.mark(ch, obj, owned)
	storedForm(obj.Object, gvk.GroupKind())
	if err := r.checkSchema(ch, obj, res); err != nil {
		return Child{}, err
	}
	return Child{ID: ch.ID, Object: obj, Resource: res, DeletionPolicy: ch.DeletionPolicy, Owned: owned, LegacyHeld: legacyHeld, entry: ch}, nil
}

// reserved rejects an object that sets what the runtime owns (a template's are rejected at load;
// an expression's object is known only now): ownerReferences, and metacel's labels and
// annotations, which the runtime would overwrite and the garbage collector fight over.
func reserved(ch *policy.CompiledChild, obj *unstructured.Unstructured) error {
	if len(obj.GetOwnerReferences()) > 0 {
		return childError(ch.Path, "%s %q sets metadata.ownerReferences, which metacel sets itself (an owner of the policy's choosing has the garbage collector delete the child): remove it", obj.GetKind(), obj.GetName())
	}
	for _, k := range slices.Sorted(maps.Keys(obj.GetLabels())) {
		if contract.IsBookkeepingLabel(k) {
			return childError(ch.Path, "%s %q sets the label %q, which is metacel's own: remove it", obj.GetKind(), obj.GetName(), k)
		}
	}
	for _, k := range slices.Sorted(maps.Keys(obj.GetAnnotations())) {
		if contract.IsBookkeepingAnnotation(k) {
			return childError(ch.Path, "%s %q sets the annotation %q, which is metacel's own: remove it", obj.GetKind(), obj.GetName(), k)
		}
	}
	return nil
}

// allowed resolves a child's kind and checks it against spec.childResources.
func (r *run) allowed(ch *policy.CompiledChild, gvk schema.GroupVersionKind) (policy.ChildResourceInfo, error) {
	if res, ok := r.c.ChildResourceOfKind(gvk); ok {
		return res, nil
	}
	if why := kinds.Misnamed(r.in.Mapper, gvk); why != "" {
		return policy.ChildResourceInfo{}, childError(ch.Path+".kind", "%s", why)
	}
	info := kinds.LookupKind(r.in.Mapper, gvk)
	res, ok := r.c.ChildResources[info.GVR]
	if !ok {
		return res, childError(ch.Path, "%s %s (resource %q) is not listed in spec.childResources",
			gvk.GroupVersion(), gvk.Kind, info.GVR.Resource)
	}
	if res.Kind == "" || res.Guessed {
		res.Info = info
	}
	return res, nil
}

// place defaults and checks the child's namespace, and reports whether the parent can own it.
func (r *run) place(ch *policy.CompiledChild, obj *unstructured.Unstructured, info kinds.Info) (bool, error) {
	parentNS := r.in.Parent.GetNamespace()
	if !info.Namespaced {
		if obj.GetNamespace() != "" {
			return false, childError(ch.Path, "%s %q is cluster-scoped and cannot have a namespace", info.Kind, obj.GetName())
		}
		if parentNS != "" && !ch.CrossNamespace {
			return false, childError(ch.Path+".crossNamespace", "%s %q is cluster-scoped and the parent is namespaced: set crossNamespace: true to allow it (it is then cleaned up by the parent's finalizer)", info.Kind, obj.GetName())
		}
		return parentNS == "", nil
	}
	if obj.GetNamespace() == "" {
		if parentNS == "" {
			return false, childError(ch.Path, "%s %q needs metadata.namespace: the parent is cluster-scoped", info.Kind, obj.GetName())
		}
		obj.SetNamespace(parentNS)
	}
	if obj.GetNamespace() == parentNS || parentNS == "" {
		return true, nil // a cluster-scoped parent can own namespaced children anywhere
	}
	if errs := validation.IsDNS1123Label(obj.GetNamespace()); len(errs) > 0 {
		return false, childError(ch.Path, "%s %q: namespace %q is invalid: %s", info.Kind, obj.GetName(), obj.GetNamespace(), errs[0])
	}
	if !ch.CrossNamespace {
		also := ""
		if r.c.Confinement.Children == nil {
			also = fmt.Sprintf(", and allow namespace %q in spec.confinement.childNamespaces, or the sync fails with NamespaceNotAllowed", obj.GetNamespace())
		}
		return false, childError(ch.Path+".crossNamespace", "%s %s is outside the parent's namespace %q: set crossNamespace: true to allow it (it is then cleaned up by the parent's finalizer)%s",
			info.Kind, NamespacedName(obj), parentNS, also)
	}
	return false, nil
}

// mark adds metacel's bookkeeping to the policy's content: the hash of that content, metacel's
// labels and, when the parent owns the child, a controller ownerReference. It writes the
// object's maps directly: the object is fresh from evaluation, and the typed setters of
// unstructured cost a reflective conversion each.
func (r *run) mark(ch *policy.CompiledChild, obj *unstructured.Unstructured, owned bool) {
	meta, _ := obj.Object["metadata"].(map[string]any) // present: finish checked the name
	hash := objectHash(obj)
	labels, _ := meta["labels"].(map[string]any)
	if labels == nil {
		labels = make(map[string]any, 6)
		meta["labels"] = labels
	}
	labels[contract.LabelManagedBy] = contract.ManagedByValue
	labels[contract.LabelChildPolicyName] = r.c.Name()
	labels[contract.LabelChildPolicyLegacy] = r.c.Name()
	labels[contract.LabelParentUID] = string(r.in.Parent.GetUID())
	labels[contract.LabelChildID] = ch.ID
	labels[contract.LabelShardSlot] = strconv.Itoa(hashslot.Of(r.in.Parent.GetUID()))
	if ch.DeletionPolicy == policy.DeletionOrphan {
		annotate(meta, contract.AnnotationDeletionPolicy, string(policy.DeletionOrphan))
	}
	if owned {
		refs, _ := meta["ownerReferences"].([]any)
		meta["ownerReferences"] = append(refs, r.ownerRef())
	}
	annotate(meta, contract.AnnotationContentHash, hash)
}

// annotate sets an annotation in an object's metadata map.
func annotate(meta map[string]any, key, value string) {
	annotations, _ := meta["annotations"].(map[string]any)
	if annotations == nil {
		annotations = map[string]any{}
		meta["annotations"] = annotations
	}
	annotations[key] = value
}

// objectHash hashes an object (JSON, whose map keys are sorted): 16 hex digits.
func objectHash(obj *unstructured.Unstructured) string {
	data, err := jsonenc.Marshal(obj.Object)
	if err != nil {
		return ""
	}
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:8])
}

// ownerRef is the parent's controller reference, as unstructured content.
func (r *run) ownerRef() map[string]any {
	p := r.in.Parent
	return map[string]any{
		"apiVersion": p.GetAPIVersion(), "kind": p.GetKind(), "name": p.GetName(), "uid": string(p.GetUID()),
		"controller": true, "blockOwnerDeletion": true,
	}
}

// judgeReadiness judges every desired child against its observed object: by its readyWhen, or
// by its kind when it has none (runtime/readiness); a child that does not exist, or is being
// deleted, is not ready. Each child gets its verdict and why it is not ready.
func (r *run) judgeReadiness(children []Child) error {
	observed := r.observedByIdentity()
	for i := range children {
		child := &children[i]
		obs, ok := observed[Identity(child.Object)]
		switch {
		case !ok:
			child.Ready, child.NotReadyBecause = false, notReadyMissing
		case obs.GetDeletionTimestamp() != nil: // being recreated, say: not ready, whatever readyWhen says
			child.Ready, child.NotReadyBecause = false, notReadyDeleting
		default:
			if err := r.judge(child, obs); err != nil {
				return err
			}
		}
	}
	return nil
}

// Why a child that does not exist, or is being deleted, is not ready (Child.NotReadyBecause).
const (
	notReadyMissing  = "missing"
	notReadyDeleting = "being deleted"
)

// judge sets the readiness of a child that exists: its readyWhen's verdict, or its kind's.
func (r *run) judge(child *Child, observed *unstructured.Unstructured) error {
	ch := child.entry
	if ch.ReadyWhen == nil {
		v := readiness.Of(observed, child.Resource.Readiness)
		child.Ready, child.Failed = v.Ready, v.Failed
		child.NotReadyBecause = ""
		if !v.Ready {
			child.NotReadyBecause = v.Reason + ": " + v.Message
		}
		return nil
	}
	ok, err := ch.ReadyWhen.EvalBool(r.ctx, expr.Extend(r.act, map[string]any{"child": ch.ForCEL(observed.Object)}), r.budget)
	if err != nil {
		return evalError(ch.Path+".readyWhen", err)
	}
	child.Ready, child.NotReadyBecause = ok, ""
	if !ok {
		child.NotReadyBecause = fmt.Sprintf("readyWhen %q is not true yet", ch.ReadyWhen.Source)
	}
	return nil
}

// Identity names an object by group, kind, namespace and name: two objects with one identity
// are the same object, whatever their version.
func Identity(o *unstructured.Unstructured) string {
	gvk := o.GroupVersionKind()
	return gvk.Group + "/" + gvk.Kind + "/" + o.GetNamespace() + "/" + o.GetName()
}

// FindSame returns the object of objs that is the same object as o (Identity), or nil.
func FindSame(objs []*unstructured.Unstructured, o *unstructured.Unstructured) *unstructured.Unstructured {
	want := Identity(o)
	for _, obj := range objs {
		if Identity(obj) == want {
			return obj
		}
	}
	return nil
}

// NamespacedName is namespace/name, or name for a cluster-scoped object.
func NamespacedName(o *unstructured.Unstructured) string {
	if o.GetNamespace() == "" {
		return o.GetName()
	}
	return o.GetNamespace() + "/" + o.GetName()
}
