package controller

import (
	"context"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/klog/v2"

	"metacel.dev/metacel/runtime/apply"
	"metacel.dev/metacel/runtime/policy"
	"metacel.dev/metacel/runtime/render"
)

// Replaces tells the controller the version of its policy it replaces, before Run. The children
// of a resource that version listed and this one does not are no longer watched, so no sync would
// see them again: Run removes them once, as a sync removes the children no longer desired.
func (c *Controller) Replaces(previous *policy.Compiled) { c.previous = previous }

// pruneDropped deletes, or releases by their old entry's deletionPolicy, the children of the
// resources the previous version of the policy listed and this one does not. It reads them from
// the API server (this controller has no informer for them); failures are logged, not retried.
func (c *Controller) pruneDropped(ctx context.Context) {
	if c.previous == nil {
		return
	}
	logger := klog.FromContext(ctx)
	for gvr := range c.previous.ChildResources {
		if _, kept := c.policy.ChildResources[gvr]; kept {
			continue
		}
		items, err := c.deps.Writer.List(ctx, gvr, render.LabelPolicy+"="+c.Name())
		if err != nil {
			logger.Error(err, "Cannot remove the children of a resource the policy no longer lists; they stay", "resource", gvr.String())
			continue
		}
		for i := range items {
			obj := &items[i]
			if !apply.AppliedBy(obj) || obj.GetDeletionTimestamp() != nil {
				continue
			}
			dp := deletionPolicy(c.previous, obj.GetLabels()[render.LabelChildID])
			if err := c.removeChild(ctx, c.parentOf(obj), gvr, dp, obj); err != nil {
				logger.Error(err, "Cannot remove a child of a resource the policy no longer lists", "child", klog.KObj(obj))
			}
		}
	}
}

// parentOf returns the cached parent a child's parent-uid label names, or nil.
func (c *Controller) parentOf(child *unstructured.Unstructured) *unstructured.Unstructured {
	objs, _ := c.parents.GetIndexer().ByIndex(byUID, child.GetLabels()[render.LabelParentUID])
	if len(objs) == 0 {
		return nil
	}
	p, _ := objs[0].(*unstructured.Unstructured)
	return p
}
