package controller

import (
	"context"
	"fmt"

	"encoding/json"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"metacel.dev/metacel/runtime/apply"
	"metacel.dev/metacel/runtime/contract"
	"metacel.dev/metacel/runtime/render"
)

// updateStatus writes the parent's status when it differs from what metacel wrote before, and
// says whether it did, with the parent's metadata as the write returned it (nil when unknown).
// fields nil keeps the policy's fields from before (a failed sync). Only metacel's share of the status is compared and re-applied (apply.OwnedStatus): another writer's
// status fields are neither compared, so they cause no write, nor taken over. A status the API
// server refuses for good (the schema rejects a field) is reported once and not sent again until
// it changes. Parents without a status subresource (built-in kinds) get no status: their
// conditions are events only.
func (c *Controller) updateStatus(ctx context.Context, parent *unstructured.Unstructured, fields map[string]any, conds []render.Condition) (written *metav1.ObjectMeta, changed bool, err error) {
	c.markParent(parentKey(parent), parent.GetUID(), conds)
	if !c.policy.Parent.HasStatus {
		return nil, c.conditionsChanged(parent, conds), nil
	}
	var owned map[string]any
	if fields == nil {
		owned = apply.OwnedStatus(parent)
		fields = orEmpty(owned) // never another writer's fields
	}
	now := metav1.NewTime(c.deps.Clock.Now())
	status, err := render.NewStatus(parent, fields, conds, &now)
	if err != nil {
		return nil, false, &permanentError{err: fmt.Errorf("status: %w", err)}
	}
	if sameJSON(status, parent.Object["status"]) {
		return nil, false, nil // the whole status is what metacel would apply: nothing to change or remove
	}
	if owned == nil {
		owned = apply.OwnedStatus(parent)
	}
	if sameJSON(status, owned) {
		return nil, false, nil
	}
	err = c.sendUnlessRefused(parent, "status", &unstructured.Unstructured{Object: status}, func() (err error) {
		if written, err = c.deps.Writer.ApplyStatus(ctx, c.policy.Parent.GVR, parent, status); err != nil {
			// the parent's conditions cannot say it: an event does (e.g. a field the schema rejects)
			c.deps.Recorder.Eventf(parent, nil, "Warning", contract.ReasonStatusFailed, "Sync", "write status: %v", err)
			if isPermanent(err) {
				return &permanentError{err: fmt.Errorf("write status: %w", err)}
			}
			return fmt.Errorf("write status: %w", err)
		}
		return nil
	})
	return written, err == nil, err
}

func orEmpty(m map[string]any) map[string]any {
	if m == nil {
		return map[string]any{}
	}
	return m
}

// sameJSON compares two values as the API server stores them: as JSON (a float 100.0 computed
// by CEL and the int 100 read back are the same number). It walks objects and lists, and encodes
// only leaves of other types than JSON's own.
func sameJSON(a, b any) bool {
	switch a := a.(type) {
	case map[string]any:
		o, ok := b.(map[string]any)
		if !ok || len(a) != len(o) || (a == nil) != (o == nil) {
			return false
		}
		for k, v := range a {
			if w, ok := o[k]; !ok || !sameJSON(v, w) {
				return false
			}
		}
		return true
	case []any:
		l, ok := b.([]any)
		if !ok || len(a) != len(l) || (a == nil) != (l == nil) {
			return false
		}
		for i := range a {
			if !sameJSON(a[i], l[i]) {
				return false
			}
		}
		return true
	case string:
		if s, ok := b.(string); ok {
			return a == s
		}
	case int64:
		if i, ok := b.(int64); ok {
			return a == i
		}
	case bool:
		if v, ok := b.(bool); ok {
			return a == v
		}
	}
	ja, errA := json.Marshal(a)
	jb, errB := json.Marshal(b)
	return errA == nil && errB == nil && string(ja) == string(jb)
}

// conditionsChanged remembers the conditions of parents without a status subresource (built-in
// kinds), so that their failures are reported as events once per change, not once per sync.
func (c *Controller) conditionsChanged(parent *unstructured.Unstructured, conds []render.Condition) bool {
	return c.parentStates.swapConditions(parentKey(parent), string(parent.GetUID())+fmt.Sprint(conds))
}

// swapConditions remembers the summary of a parent's conditions (parentState.conditions), and
// reports whether it differs from the one remembered before.
func (s *parentStates) swapConditions(key, summary string) (changed bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	p := s.stateLocked(key)
	if p.conditions == summary {
		return false
	}
	p.conditions = summary
	return true
}
