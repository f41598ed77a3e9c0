package controller

import (
	"context"
	"fmt"

	"encoding/json"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"metacel.dev/metacel/runtime/render"
)

// updateStatus writes the parent's status when it differs from what the parent has, and says
// whether it did. fields nil keeps the policy's fields from before (a failed sync). Parents
// without a status subresource (built-in kinds) get no status: their conditions are events only.
func (c *Controller) updateStatus(ctx context.Context, parent *unstructured.Unstructured, fields map[string]any, conds []render.Condition) (bool, error) {
	if !c.policy.Parent.HasStatus {
		return c.conditionsChanged(parent, conds), nil
	}
	now := metav1.NewTime(c.deps.Clock.Now())
	status, err := render.NewStatus(parent, fields, conds, &now)
	if err != nil {
		return false, &permanentError{err: fmt.Errorf("status: %w", err)}
	}
	if sameJSON(status, parent.Object["status"]) {
		return false, nil
	}
	if err := c.deps.Writer.ApplyStatus(ctx, c.policy.Parent.GVR, parent, status); err != nil {
		// the parent's conditions cannot say it: an event does (e.g. a field the schema rejects)
		c.deps.Recorder.Eventf(parent, nil, "Warning", ReasonStatusFailed, "Sync", "write status: %v", err)
		return false, fmt.Errorf("write status: %w", err)
	}
	return true, nil
}

// sameJSON compares two values as the API server stores them: as JSON (a float 100.0 computed
// by CEL and the int 100 read back are the same number).
func sameJSON(a, b any) bool {
	ja, errA := json.Marshal(a)
	jb, errB := json.Marshal(b)
	return errA == nil && errB == nil && string(ja) == string(jb)
}

// conditionsChanged remembers the conditions of parents without a status subresource (built-in
// kinds), so that their failures are reported as events once per change, not once per sync.
func (c *Controller) conditionsChanged(parent *unstructured.Unstructured, conds []render.Condition) bool {
	key := parentKey(parent)
	summary := string(parent.GetUID()) + fmt.Sprint(conds)
	c.lastConds.Lock()
	defer c.lastConds.Unlock()
	if c.lastConds.m[key] == summary {
		return false
	}
	c.lastConds.m[key] = summary
	return true
}

// forgetConditions drops the conditions remembered of a parent that is gone.
func (c *Controller) forgetConditions(key string) {
	c.lastConds.Lock()
	defer c.lastConds.Unlock()
	delete(c.lastConds.m, key)
}
