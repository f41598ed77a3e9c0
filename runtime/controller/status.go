package controller

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/klog/v2"

	"metacel.dev/metacel/runtime/apply"
	"metacel.dev/metacel/runtime/contract"
	"metacel.dev/metacel/runtime/policy"
	"metacel.dev/metacel/runtime/render"
)

// reporter reports what a sync concluded on its parent: the status and conditions (through the
// status subresource; events for kinds without one), and a failure's condition and event.
type reporter struct {
	policy *policy.Compiled
	deps   *Deps
	states *parentStates
}

// fail reports a failed sync on the parent (Synced=False, and a Warning event when the condition
// is new) and says whether to retry: render errors and invalid requests wait for an input to
// change; API errors and conflicts are retried with backoff. A 409 (a write guarded by a stale
// resourceVersion) is retried unreported, and a retried failure the parent reports already is
// not written again for another message (reportsAlready). A write the write fence refused is
// not reported: this replica may no longer write for the parent, an event included (events carry
// no slot, so the fence would let one through), and the replica that holds it reports.
func (r *reporter) fail(ctx context.Context, parent *unstructured.Unstructured, err error) error {
	if apierrors.ReasonForError(err) == reasonWriteFenced {
		return err // this replica may no longer write for the parent: neither its status nor an event
	}
	if apierrors.IsConflict(err) {
		// a write guarded by the resourceVersion the cache held, which was stale: retried once the
		// cache has the object's latest, no failure of the parent's to report
		klog.FromContext(ctx).V(2).Info("Sync retried: an object changed since it was read", "err", err)
		return err
	}
	var se *syncError
	reason, retry := contract.ReasonEvaluationError, false
	switch {
	case errors.As(err, &se) && se.reason != "":
		reason, retry = se.reason, !allRefusedForGood(err)
	case isRenderError(err):
		reason = render.ErrorConditions(err, reason)[0].Reason
	case isTransient(err): // a read that failed on the way (a large object fetched, a 429)
		retry = true
	}
	conds := render.FailureConditions(reason, err.Error())
	if retry && r.reportsAlready(parent, reason, err.Error()) {
		r.states.markParent(parentKey(parent), parent.GetUID(), conds) // counted as failing, as its status says
		klog.FromContext(ctx).V(2).Info("Sync failed again", "reason", reason, "err", err)
		return err
	}
	_, changed, serr := r.updateStatus(ctx, parent, nil, conds)
	if changed {
		r.deps.Recorder.Eventf(parent, nil, "Warning", reason, "Sync", "%s", err.Error())
	}
	klog.FromContext(ctx).V(2).Info("Sync failed", "reason", reason, "err", err)
	switch {
	case serr != nil && !isTerminal(serr):
		// the status write is retried, whatever the sync's own error: retrying, not terminal
		return &syncError{reason: reason, err: errors.Join(err, serr)}
	case retry:
		return err
	}
	return terminal(err)
}

// reportsAlready reports whether the parent's status says already that its syncs fail for
// reason, at its generation, on the same subjects (what each line of the message says before its
// first ": ", such as "create ConfigMap ns/web"): a failure that is retried is not written again for another
// detail (an API server in trouble answers timeouts and leader changes in turn). The write's own
// echo, the parent's update event, would sync it again at once, past the backoff, each time with a
// new status and a new Warning event.
func (r *reporter) reportsAlready(parent *unstructured.Unstructured, reason, message string) bool {
	if !r.policy.Parent.HasStatus {
		return false
	}
	conds, _, _ := unstructured.NestedSlice(parent.Object, "status", "conditions")
	for _, c := range conds {
		m, _ := c.(map[string]any)
		if m["type"] != contract.ConditionSynced {
			continue
		}
		gen, _, _ := unstructured.NestedInt64(m, "observedGeneration")
		said, _ := m["message"].(string)
		return m["status"] == "False" && m["reason"] == reason && gen == parent.GetGeneration() && subjects(said) == subjects(message)
	}
	return false
}

// subjects is what a failure's message is about: the words before the first ": " of each of its
// lines (the failures of several children, joined), sorted.
func subjects(message string) string {
	var out []string
	for line := range strings.Lines(message) {
		before, _, _ := strings.Cut(strings.TrimSuffix(line, "\n"), ": ")
		out = append(out, before)
	}
	slices.Sort(out)
	return strings.Join(slices.Compact(out), "\n")
}

// updateStatus writes the parent's status when it differs from what metacel wrote before, and
// says whether it did, with the parent's metadata as the write returned it (nil when unknown).
// fields nil keeps the policy's fields from before (a failed sync). Only metacel's share of the status is compared and re-applied (apply.OwnedStatus): another writer's
// status fields are neither compared, so they cause no write, nor taken over. A status the API
// server refuses for good (the schema rejects a field) is reported once and not sent again until
// it changes. Parents without a status subresource (built-in kinds) get no status: their
// conditions are events only.
func (r *reporter) updateStatus(ctx context.Context, parent *unstructured.Unstructured, fields map[string]any, conds []render.Condition) (written *metav1.ObjectMeta, changed bool, err error) {
	r.states.markParent(parentKey(parent), parent.GetUID(), conds)
	if !r.policy.Parent.HasStatus {
		return nil, r.states.conditionsChanged(parent, conds), nil
	}
	var owned map[string]any
	now := metav1.NewTime(r.deps.Clock.Now())
	var status map[string]any
	if fields == nil {
		owned = apply.OwnedStatus(parent)
		status, err = render.KeptStatus(parent, orEmpty(owned), conds, &now) // never another writer's fields
	} else {
		status, err = render.NewStatus(parent, fields, conds, &now)
	}
	if err != nil {
		return nil, false, terminal(fmt.Errorf("status: %w", err))
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
	err = r.states.sendUnlessRefused(parent, "status", untimed(status), func() (err error) {
		if written, err = r.deps.Writer.ApplyStatus(ctx, r.policy.Parent.GVR, parent, status); err != nil {
			// the parent's conditions cannot say it: an event does (e.g. a field the schema rejects)
			r.deps.Recorder.Eventf(parent, nil, "Warning", contract.ReasonStatusFailed, "Sync", "write status: %v", err)
			if isPermanent(err) {
				return terminal(fmt.Errorf("write status: %w", err))
			}
			return fmt.Errorf("write status: %w", err)
		}
		return nil
	})
	return written, err == nil, err
}

// untimed is a status as a refusal remembers it: without its conditions' lastTransitionTime,
// which a condition of a new parent, or one that changes, takes from the clock at every sync: the
// same status refused is then the same a second later, not sent again.
func untimed(status map[string]any) *unstructured.Unstructured {
	conds, _ := status["conditions"].([]any)
	if len(conds) == 0 {
		return &unstructured.Unstructured{Object: status}
	}
	out := maps.Clone(status)
	untimedConds := make([]any, len(conds))
	for i, c := range conds {
		untimedConds[i] = c
		if m, ok := c.(map[string]any); ok {
			m = maps.Clone(m)
			delete(m, "lastTransitionTime")
			untimedConds[i] = m
		}
	}
	out["conditions"] = untimedConds
	return &unstructured.Unstructured{Object: out}
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
func (s *parentStates) conditionsChanged(parent *unstructured.Unstructured, conds []render.Condition) bool {
	return s.swapConditions(parentKey(parent), string(parent.GetUID())+fmt.Sprint(conds))
}

// swapConditions remembers the summary of a parent's conditions (parentState.conditions), and
// reports whether it differs from the one remembered before.
func (s *parentStates) swapConditions(key, summary string) (changed bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	p := s.stateLocked(key)
	if p.seldomRead().conditions == summary {
		return false
	}
	p.seldomFields().conditions = summary
	return true
}
