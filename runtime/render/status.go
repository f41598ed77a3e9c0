package render

import (
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	"metacel.dev/metacel/runtime/contract"
)

// Condition is a parent condition before it is timed: NewStatus adds the transition time and
// observed generation.
type Condition struct {
	Type, Status, Reason, Message string
}

// Conditions are the Synced and Ready conditions of a successful sync, then the parent's own
// (spec.conditions).
func (o *Output) Conditions() []Condition {
	return append([]Condition{
		{Type: contract.ConditionSynced, Status: "True", Reason: contract.ReasonSynced, Message: fmt.Sprintf("%s applied", count(len(o.Children)))},
		o.readyCondition(),
	}, o.Own...)
}

// readyCondition says why the parent is not ready, first what waiting does not fix: a child that
// failed, then a readyWhen that failed (a policy bug its author has to fix); then the children
// not ready yet, then the parent's own readyWhen or that no child is included.
func (o *Output) readyCondition() Condition {
	notReady := func(reason, msg string) Condition {
		return Condition{Type: contract.ConditionReady, Status: "False", Reason: reason, Message: msg}
	}
	switch {
	case o.Ready():
		return Condition{Type: contract.ConditionReady, Status: "True", Reason: contract.ReasonReady, Message: fmt.Sprintf("%s ready", count(len(o.Children)))}
	case len(o.Failed) > 0:
		msg := summarize(o.Failed)
		if waiting := o.waiting(); len(waiting) > 0 {
			msg += "; waiting for " + summarize(waiting)
		}
		return notReady(contract.ReasonChildFailed, msg)
	case len(o.ReadyWhenErrors) > 0:
		msg := "readyWhen failed for " + o.ReadyWhenErrors[0]
		if len(o.NotReady) > 0 {
			msg = fmt.Sprintf("waiting for %s; %s", summarize(o.NotReady), msg)
		}
		if more := len(o.ReadyWhenErrors) - 1; more > 0 {
			msg += fmt.Sprintf(" (and %d more readyWhen errors)", more)
		}
		return notReady(contract.ReasonReadyWhenFailed, msg)
	case len(o.NotReady) > 0:
		return notReady(contract.ReasonNotReady, "waiting for "+summarize(o.NotReady))
	default:
		return notReady(o.WaitingReason, o.Waiting)
	}
}

// waiting are the children not ready that have not failed.
func (o *Output) waiting() []string {
	var out []string
	for i := range o.Children {
		if ch := &o.Children[i]; !ch.Ready && !ch.Failed {
			out = append(out, notReadyName(ch))
		}
	}
	return out
}

// judgeEachChild judges the readiness of each desired child on its own (judgeReadiness), and
// lists in out the children not ready, those that failed and the readyWhen errors. A readyWhen
// that fails to evaluate makes its child not ready rather than failing the sync: it reads what
// other controllers write (a child's status, absent until they write it), and a mistake there
// must not keep the children from being applied, nor hide the other children's readiness. What
// stops every expression alike still fails the render: the sync's cost budget spent, or its
// context done.
func (r *run) judgeEachChild(out *Output) error {
	for i := range out.Children {
		child := &out.Children[i]
		if err := r.judgeReadiness(out.Children[i : i+1]); err != nil {
			if r.budget.Remaining() == 0 || r.ctx.Err() != nil {
				return err
			}
			child.Ready, child.Failed, child.NotReadyBecause = false, false, err.Error()
			out.ReadyWhenErrors = append(out.ReadyWhenErrors, fmt.Sprintf("%s: %v", childName(child.Object), err))
		}
		if child.Ready {
			continue
		}
		out.NotReady = append(out.NotReady, notReadyName(child))
		if child.Failed {
			out.Failed = append(out.Failed, childName(child.Object)+" failed: "+child.NotReadyBecause)
		}
	}
	for _, h := range out.Held {
		out.NotReady = append(out.NotReady, "child "+h.ID+" ("+h.Why+")")
	}
	return nil
}

// notReadyName names a child that is not ready as the Ready condition does: with its kind's
// reason when its kind judged it (it has no readyWhen, and exists).
func notReadyName(child *Child) string {
	name := childName(child.Object)
	if child.entry != nil && child.entry.ReadyWhen == nil && child.NotReadyBecause != "" &&
		child.NotReadyBecause != notReadyMissing && child.NotReadyBecause != notReadyDeleting {
		return name + " (" + child.NotReadyBecause + ")"
	}
	return name
}

// childName names a child as the Ready condition does: kind, then namespace/name.
func childName(obj *unstructured.Unstructured) string {
	return obj.GetKind() + " " + NamespacedName(obj)
}

// FailureConditions are the Synced and Ready conditions of a failed sync, their messages cut to
// what a condition may hold (an error can be longer: a status the API server refuses would leave
// the parent saying it is synced).
func FailureConditions(reason, message string) []Condition {
	return []Condition{
		{Type: contract.ConditionSynced, Status: "False", Reason: reason, Message: clipMessage(message)},
		{Type: contract.ConditionReady, Status: "False", Reason: reason, Message: clipMessage("not synced: " + message)},
	}
}

// clipMessage cuts a condition's message to contract.MaxConditionMessage bytes, on a character
// boundary, saying it was cut.
func clipMessage(msg string) string {
	if len(msg) <= contract.MaxConditionMessage {
		return msg
	}
	const more = " … (cut)"
	cut := contract.MaxConditionMessage - len(more)
	for cut > 0 && !utf8.RuneStart(msg[cut]) {
		cut--
	}
	return msg[:cut] + more
}

// ErrorConditions are the conditions that report err, a render *Error or another failure with
// the given fallback reason.
func ErrorConditions(err error, fallbackReason string) []Condition {
	var re *Error
	if errors.As(err, &re) {
		return FailureConditions(re.Reason, re.Error())
	}
	return FailureConditions(fallbackReason, err.Error())
}

func summarize(names []string) string {
	const most = 3
	if len(names) <= most {
		return strings.Join(names, ", ")
	}
	return fmt.Sprintf("%s and %d more", strings.Join(names[:most], ", "), len(names)-most)
}

// NewStatus returns the parent's next status: the policy's fields (or, when fields is nil because
// the sync failed, the fields the status had: KeptStatus), observedGeneration, and conditions:
// those the policy computed in fields["conditions"], then runtime's conds. A condition keeps its
// lastTransitionTime while its status is unchanged; a changed one gets now (none when now is nil,
// as in an offline render).
func NewStatus(parent *unstructured.Unstructured, fields map[string]any, conds []Condition, now *metav1.Time) (map[string]any, error) {
	if fields == nil {
		old, _, _ := unstructured.NestedMap(parent.Object, "status")
		return KeptStatus(parent, old, conds, now)
	}
	return nextStatus(parent, fields, conds, now, false)
}

// KeptStatus is the status of a sync that failed before it evaluated the policy's status: kept,
// the fields the status had (in the runtime, metacel's share of them), with the runtime's conds.
// The policy's conditions among them keep the generation they were evaluated at: a failed sync
// says nothing of them at the parent's new generation.
func KeptStatus(parent *unstructured.Unstructured, kept map[string]any, conds []Condition, now *metav1.Time) (map[string]any, error) {
	return nextStatus(parent, kept, conds, now, true)
}

func nextStatus(parent *unstructured.Unstructured, fields map[string]any, conds []Condition, now *metav1.Time, kept bool) (map[string]any, error) {
	old, _, _ := unstructured.NestedMap(parent.Object, "status")
	status := runtime.DeepCopyJSON(orEmpty(fields))
	dropEmptyObjects(status)
	policyConds, err := policyConditions(status["conditions"])
	if err != nil {
		return nil, err
	}
	oldConds, _ := policyConditions(old["conditions"])
	gen := parent.GetGeneration()
	out := make([]any, 0, len(policyConds)+len(conds))
	for _, c := range policyConds {
		if hasType(conds, c.Type) {
			continue // the runtime's own conditions win
		}
		at := gen
		if kept {
			at = c.ObservedGeneration
		}
		out = append(out, timedCondition(c.Condition, findCondition(oldConds, c.Type), at, now))
	}
	for _, c := range conds {
		out = append(out, timedCondition(c, findCondition(oldConds, c.Type), gen, now))
	}
	status["conditions"] = out
	status["observedGeneration"] = gen
	return status, nil
}

// dropEmptyObjects removes, in place, the fields whose value is an empty object (after removing
// theirs): server-side apply stores an empty object applied over fields metacel applied before as
// null, which a CRD schema refuses ("must be of type object"). Not applying the field removes it.
func dropEmptyObjects(m map[string]any) {
	for k, v := range m {
		if sub, ok := v.(map[string]any); ok {
			dropEmptyObjects(sub)
			if len(sub) == 0 {
				delete(m, k)
			}
		}
	}
}

func orEmpty(m map[string]any) map[string]any {
	if m == nil {
		return map[string]any{}
	}
	return m
}

// timedCond is a condition as written, with its transition time.
type timedCond struct {
	Condition
	LastTransitionTime string
	// ObservedGeneration is the generation the condition was evaluated at (0: not said)
	ObservedGeneration int64
}

// timedCondition is c as the status holds it, evaluated at generation gen (0: not said).
func timedCondition(c Condition, old *timedCond, gen int64, now *metav1.Time) map[string]any {
	m := map[string]any{
		"type": c.Type, "status": c.Status, "reason": c.Reason, "message": c.Message,
	}
	if gen > 0 {
		m["observedGeneration"] = gen
	}
	switch {
	case old != nil && old.Status == c.Status && old.LastTransitionTime != "":
		m["lastTransitionTime"] = old.LastTransitionTime
	case now != nil:
		m["lastTransitionTime"] = now.UTC().Format("2006-01-02T15:04:05Z")
	case old != nil && old.LastTransitionTime != "":
		m["lastTransitionTime"] = old.LastTransitionTime
	}
	return m
}

// policyConditions reads a list of conditions: each needs type and status; reason defaults to
// the status and message to empty.
func policyConditions(v any) ([]timedCond, error) {
	list, ok := v.([]any)
	if v == nil {
		return nil, nil
	}
	if !ok {
		return nil, fmt.Errorf("status.conditions must be a list of conditions, got %T", v)
	}
	out := make([]timedCond, 0, len(list))
	for i, item := range list {
		m, _ := item.(map[string]any)
		c := timedCond{}
		c.Type, _ = m["type"].(string)
		c.Status, _ = m["status"].(string)
		c.Reason, _ = m["reason"].(string)
		c.Message, _ = m["message"].(string)
		c.LastTransitionTime, _ = m["lastTransitionTime"].(string)
		switch g := m["observedGeneration"].(type) {
		case int64:
			c.ObservedGeneration = g
		case float64:
			c.ObservedGeneration = int64(g)
		}
		if c.Type == "" || c.Status == "" {
			return nil, fmt.Errorf("status.conditions[%d] needs a type and a status", i)
		}
		if c.Reason == "" {
			c.Reason = c.Status
		}
		out = append(out, c)
	}
	return out, nil
}

func findCondition(conds []timedCond, typ string) *timedCond {
	for i := range conds {
		if conds[i].Type == typ {
			return &conds[i]
		}
	}
	return nil
}

func hasType(conds []Condition, typ string) bool {
	for _, c := range conds {
		if c.Type == typ {
			return true
		}
	}
	return false
}

// count says "1 child" or "n children".
func count(n int) string {
	if n == 1 {
		return "1 child"
	}
	return fmt.Sprintf("%d children", n)
}
