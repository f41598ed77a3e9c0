package decide

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/runtime/schema"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"metacel.dev/metacel/runtime/contract"
	"metacel.dev/metacel/runtime/decide/noop"
	"metacel.dev/metacel/runtime/render"
)

// What metacel writes on a child for itself (its bookkeeping: the labels and annotations of
// render's contract, the parent's controller ownerReference) is decided apart from what the
// policy computes (its content). A child whose content is as the policy wants is never written
// whole again, nor recreated, because of its bookkeeping: a runtime that adds, renames or retires
// a key, or someone who removed a label, costs one patch of those fields (UpdateBookkeeping), for
// every update strategy, OnDelete included.

// Bookkeeping is a patch of a child's bookkeeping: the keys to set or remove, and the owner
// references to hold.
type Bookkeeping struct {
	// Labels and Annotations set a key (its value) or remove it (nil).
	Labels, Annotations map[string]*string
	// OwnerReferences is the child's whole list of owners after the patch, when Owners is true.
	OwnerReferences []metav1.OwnerReference
	Owners          bool
}

// Patch is the patch of the child's metadata (a JSON merge patch's metadata: nil removes a key).
func (b *Bookkeeping) Patch() map[string]any {
	meta := map[string]any{}
	if len(b.Labels) > 0 {
		meta["labels"] = patchOf(b.Labels)
	}
	if len(b.Annotations) > 0 {
		meta["annotations"] = patchOf(b.Annotations)
	}
	if b.Owners {
		refs := make([]any, 0, len(b.OwnerReferences))
		for _, r := range b.OwnerReferences {
			ref := map[string]any{"apiVersion": r.APIVersion, "kind": r.Kind, "name": r.Name, "uid": string(r.UID)}
			if r.Controller != nil {
				ref["controller"] = *r.Controller
			}
			if r.BlockOwnerDeletion != nil {
				ref["blockOwnerDeletion"] = *r.BlockOwnerDeletion
			}
			refs = append(refs, ref)
		}
		meta["ownerReferences"] = refs
	}
	return meta
}

func patchOf(keys map[string]*string) map[string]any {
	out := make(map[string]any, len(keys))
	for k, v := range keys {
		if v == nil {
			out[k] = nil
		} else {
			out[k] = *v
		}
	}
	return out
}

// String says what the patch changes, keys sorted: "label metacel.dev/shard-slot set, annotation
// metacel.dev/desired-hash removed".
func (b *Bookkeeping) String() string {
	var parts []string
	describe := func(what string, keys map[string]*string) {
		for _, k := range slices.Sorted(maps.Keys(keys)) {
			verb := "set"
			if keys[k] == nil {
				verb = "removed"
			}
			parts = append(parts, fmt.Sprintf("%s %s %s", what, k, verb))
		}
	}
	describe("label", b.Labels)
	describe("annotation", b.Annotations)
	if b.Owners {
		parts = append(parts, "the parent's ownerReference "+map[bool]string{true: "set", false: "removed"}[hasController(b.OwnerReferences)])
	}
	return strings.Join(parts, ", ")
}

// contentHeld reports whether an observed child holds the content the policy wants: it carries
// the content hash of the desired child (or, written by a runtime before the content hash, holds
// it: render's LegacyHeld), and every field the policy sets has its value (drift is a change),
// or the value admission gave it when metacel wrote this content (a mutating webhook's rewrite,
// read from the child's managed fields: package noop), which writing it again would not change.
// Bookkeeping is not compared.
func contentHeld(child *render.Child, obs *unstructured.Unstructured) bool {
	want, _ := metaStrings(child.Object, "annotations")[contract.AnnotationContentHash].(string)
	got, _ := metaStrings(obs, "annotations")[contract.AnnotationContentHash].(string)
	if got != want && (got != "" || !child.LegacyHeld) {
		return false
	}
	return !contentNeedsApply(child, child.Object, obs, true)
}

// contentNeedsApply is the no-op check (package noop) of what the policy computes: whether
// applying desired, the child or some of its fields, would change obs, as the schema of the
// child's resource compares them; metacel's bookkeeping is not compared. writtenAsDesired says
// that obs is what metacel's last write of desired's content became (noop.Schema.ContentNeedsApply).
func contentNeedsApply(child *render.Child, desired, obs *unstructured.Unstructured, writtenAsDesired bool) bool {
	return noop.SchemaFor(child.Resource.GVK(), child.Resource.Schema).
		ContentNeedsApply(desired, obs, contract.IsBookkeepingLabel, contract.IsBookkeepingAnnotation, writtenAsDesired)
}

// bookkeepingOf is the patch that brings an observed child's bookkeeping to the desired child's,
// nil when it is up to date: each key this runtime writes set to its value, or removed where the
// child should not have it (the deletion policy of a child no longer Orphan); retired keys
// removed; the parent's controller ownerReference added or removed. The content hash is only
// set when the child holds the content (held): an OnDelete child that differs keeps the hash of
// what it holds. Keys this runtime does not know (a later runtime's) are left alone. It reads
// both objects in place, and allocates only for a patch.
func bookkeepingOf(child *render.Child, obs *unstructured.Unstructured, held bool) *Bookkeeping {
	keep := ""
	if !held {
		keep = contract.AnnotationContentHash
	}
	labels := keysPatch(metaStrings(child.Object, "labels"), metaStrings(obs, "labels"), contract.ChildLabels, contract.RetiredChildLabels, "")
	annotations := keysPatch(metaStrings(child.Object, "annotations"), metaStrings(obs, "annotations"), contract.ChildAnnotations, contract.RetiredChildAnnotations, keep)
	var refs []metav1.OwnerReference
	owners := false
	if !sameOwners(child.Object, obs) {
		refs, owners = ownersPatch(child, obs)
	}
	if len(labels) == 0 && len(annotations) == 0 && !owners {
		return nil
	}
	return &Bookkeeping{Labels: labels, Annotations: annotations, OwnerReferences: refs, Owners: owners}
}

// metaStrings reads a map of strings of an object's metadata (labels, annotations) in place,
// without the copy unstructured's getters make: it must not be modified.
func metaStrings(obj *unstructured.Unstructured, field string) map[string]any {
	meta, _ := obj.Object["metadata"].(map[string]any)
	m, _ := meta[field].(map[string]any)
	return m
}

// keysPatch is the patch of one map of strings: each of ours set as desired has it, or removed
// when desired has it not; each retired key removed; keep ("": none) is one of ours to leave as
// it is.
func keysPatch(desired, observed map[string]any, ours, retired []string, keep string) map[string]*string {
	var patch map[string]*string
	for _, k := range ours {
		if k == keep {
			continue
		}
		want, wanted := desired[k].(string)
		got, has := observed[k].(string)
		switch {
		case wanted && (!has || got != want):
			patch = withKey(patch, k, &[]string{want}[0])
		case !wanted && has:
			patch = withKey(patch, k, nil)
		}
	}
	for _, k := range retired {
		if _, has := observed[k]; has {
			patch = withKey(patch, k, nil)
		}
	}
	return patch
}

// withKey adds a key to a patch, made when nil.
func withKey(patch map[string]*string, k string, v *string) map[string]*string {
	if patch == nil {
		patch = map[string]*string{}
	}
	patch[k] = v
	return patch
}

// sameOwners reports, reading both objects in place, whether the observed child has the parent's
// controller ownerReference exactly when the desired child has it, as the desired child has it.
func sameOwners(desired, observed *unstructured.Unstructured) bool {
	parent, _ := metaStrings(desired, "labels")[contract.LabelParentUID].(string)
	want := ownerRefOf(desired, parent)
	got := ownerRefOf(observed, parent)
	if want == nil || got == nil {
		return want == nil && got == nil
	}
	wantVersion, _ := want["apiVersion"].(string)
	gotVersion, _ := got["apiVersion"].(string)
	return sameGroup(wantVersion, gotVersion) && want["kind"] == got["kind"] && want["name"] == got["name"] &&
		want["controller"] == got["controller"] && want["blockOwnerDeletion"] == got["blockOwnerDeletion"]
}

// ownerRefOf returns, in place, an object's ownerReference to the owner of that UID, or nil.
func ownerRefOf(obj *unstructured.Unstructured, uid string) map[string]any {
	meta, _ := obj.Object["metadata"].(map[string]any)
	refs, _ := meta["ownerReferences"].([]any)
	for _, r := range refs {
		if ref, ok := r.(map[string]any); ok && ref["uid"] == uid {
			return ref
		}
	}
	return nil
}

// ownersPatch is the observed child's owners with the parent's controller ownerReference as the
// desired child has it or has it not; false when they are already so.
func ownersPatch(child *render.Child, obs *unstructured.Unstructured) ([]metav1.OwnerReference, bool) {
	parent := child.Object.GetLabels()[contract.LabelParentUID]
	var want *metav1.OwnerReference
	for _, r := range child.Object.GetOwnerReferences() {
		if string(r.UID) == parent {
			want = &r
		}
	}
	refs := obs.GetOwnerReferences()
	i := slices.IndexFunc(refs, func(r metav1.OwnerReference) bool { return string(r.UID) == parent })
	switch {
	case want != nil && i < 0:
		return append(refs, *want), true
	case want != nil && !sameOwner(refs[i], *want):
		refs[i] = *want
		return refs, true
	case want == nil && i >= 0:
		return slices.Delete(refs, i, i+1), true
	}
	return nil, false
}

// sameOwner reports whether an owner reference is the one metacel writes: same object, and the
// parent's controller blocking its deletion.
func sameOwner(a, b metav1.OwnerReference) bool {
	return sameGroup(a.APIVersion, b.APIVersion) && a.Kind == b.Kind && a.Name == b.Name && a.UID == b.UID &&
		isTrue(a.Controller) == isTrue(b.Controller) && isTrue(a.BlockOwnerDeletion) == isTrue(b.BlockOwnerDeletion)
}

// sameGroup reports whether two apiVersions are of one group: an ownerReference names its owner
// at any version of its group (the garbage collector finds it by UID), so that a parent whose
// policy moves to another version of its API leaves its children's owner references as they are.
func sameGroup(a, b string) bool {
	ga, _ := schema.ParseGroupVersion(a)
	gb, _ := schema.ParseGroupVersion(b)
	return ga.Group == gb.Group
}

func isTrue(b *bool) bool { return b != nil && *b }

func hasController(refs []metav1.OwnerReference) bool {
	return slices.ContainsFunc(refs, func(r metav1.OwnerReference) bool { return isTrue(r.Controller) })
}
