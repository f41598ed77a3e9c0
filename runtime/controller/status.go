package controller

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"metacel.dev/metacel/runtime/render"
)

// updateStatus writes the parent's status when it differs from what the parent has, and says
// whether it did. fields nil keeps the policy's fields from before (a failed sync). Parents
// without a status subresource (built-in kinds) get no status: their conditions are events only.
func (c *Controller) updateStatus(ctx context.Context, parent *unstructured.Unstructured, fields map[string]any, conds []render.Condition) (bool, error) {
	if !c.policy.Parent.HasStatus {
		return true, nil
	}
	now := metav1.NewTime(c.deps.Clock.Now())
	status, err := render.NewStatus(parent, fields, conds, &now)
	if err != nil {
		return false, &permanentError{err: fmt.Errorf("status: %w", err)}
	}
	if equality.Semantic.DeepEqual(status, parent.Object["status"]) {
		return false, nil
	}
	if err := c.deps.Writer.ApplyStatus(ctx, c.policy.Parent.GVR, parent, status); err != nil {
		return false, fmt.Errorf("write status: %w", err)
	}
	return true, nil
}
