package controller

import (
	"context"
	"slices"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"metacel.dev/metacel/runtime/apply"
	"metacel.dev/metacel/runtime/decide"
	"metacel.dev/metacel/runtime/render"
)

// ensureFinalizer makes sure a parent with children it does not own (cross-namespace or
// cluster-scoped ones, to delete; Orphan ones, to release) carries the cleanup finalizer before
// they are created, and drops it once it has none left.
func (c *Controller) ensureFinalizer(ctx context.Context, parent *unstructured.Unstructured, out *render.Output, observed map[string][]*unstructured.Unstructured) error {
	need := false
	for _, ch := range out.Children {
		need = need || !ch.Owned
	}
	for _, objs := range observed {
		for _, o := range objs {
			// only what metacel applied is its to clean up: an object made by hand that merely
			// carries the parent's labels is not
			need = need || !hasOwnerRef(o, parent) && apply.AppliedBy(o)
		}
	}
	has := slices.Contains(parent.GetFinalizers(), render.Finalizer)
	if need == has {
		return nil
	}
	if err := c.deps.Writer.SetFinalizer(ctx, c.policy.Parent.GVR, parent, render.Finalizer, need); err != nil {
		return applyError("update finalizers of", parent, err)
	}
	return nil
}

// finalize cleans up a deleted parent's children that garbage collection cannot reach (those
// without an ownerReference), then removes the finalizer. Their deletions re-sync the parent,
// so it is finalized once they are gone.
func (c *Controller) finalize(ctx context.Context, parent *unstructured.Unstructured) error {
	if !slices.Contains(parent.GetFinalizers(), render.Finalizer) {
		return nil
	}
	remaining := 0
	for _, objs := range c.observedChildren(ctx, c.cachedChildren(parent.GetUID())) {
		for _, obs := range objs {
			if hasOwnerRef(obs, parent) || !apply.AppliedBy(obs) {
				continue // garbage collection removes it with the parent; or it is not metacel's
			}
			remaining++
			if obs.GetDeletionTimestamp() == nil {
				if err := c.remove(ctx, parent, decide.Removal(obs, c.policy, c.previous)); err != nil {
					return err
				}
			}
		}
	}
	if remaining > 0 {
		return nil
	}
	if left, err := c.unownedChildrenLive(ctx, parent); err != nil || left > 0 {
		return err // a child the cache had not seen yet: it is being deleted, and re-syncs the parent
	}
	if err := c.deps.Writer.SetFinalizer(ctx, c.policy.Parent.GVR, parent, render.Finalizer, false); err != nil {
		return applyError("remove the finalizer of", parent, err)
	}
	return nil
}

// hasOwnerRef reports whether obj has an ownerReference to parent (garbage collection deletes it).
func hasOwnerRef(obj, parent *unstructured.Unstructured) bool {
	for _, r := range obj.GetOwnerReferences() {
		if r.UID == parent.GetUID() {
			return true
		}
	}
	return false
}

// unownedChildrenLive asks the API server, not the cache, for the parent's children without an
// ownerReference, deletes them, and returns how many there were: the finalizer goes only when
// none is left, even one created just before the parent's deletion and not cached yet.
func (c *Controller) unownedChildrenLive(ctx context.Context, parent *unstructured.Unstructured) (int, error) {
	selector := render.LabelParentUID + "=" + string(parent.GetUID()) + "," + render.LabelPolicy + "=" + c.Name()
	left := 0
	for gvr := range c.policy.ChildResources {
		items, err := c.deps.Writer.List(ctx, gvr, selector)
		if err != nil {
			return 0, applyError("list the children of", parent, err)
		}
		for i := range items {
			obj := &items[i]
			if hasOwnerRef(obj, parent) || !apply.AppliedBy(obj) {
				continue
			}
			left++
			if obj.GetDeletionTimestamp() == nil {
				if err := c.remove(ctx, parent, decide.Removal(obj, c.policy, c.previous)); err != nil {
					return 0, err
				}
			}
		}
	}
	return left, nil
}
