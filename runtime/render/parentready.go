package render

import (
	"fmt"

	"metacel.dev/metacel/runtime/contract"
	"metacel.dev/metacel/runtime/policy"
)

// judgeParent judges the parent's own readiness, once its children are judged: its readyWhen
// (spec.readyWhen), or, without one, whether any child is included at all. A readyWhen that
// fails to evaluate makes the parent not ready, as a child's does, rather than failing the sync.
func (r *run) judgeParent(out *Output) error {
	out.Waiting, out.WaitingReason = "", ""
	if r.c.ReadyWhen == nil {
		if len(out.Children) == 0 {
			out.Waiting, out.WaitingReason = noChildIncluded(r.c, out.Excluded), contract.ReasonNoChildIncluded
		}
		return nil
	}
	ok, err := r.c.ReadyWhen.EvalBool(r.ctx, r.act, r.budget)
	switch {
	case err != nil && (r.budget.Remaining() == 0 || r.ctx.Err() != nil):
		return evalError("spec.readyWhen", err)
	case err != nil:
		out.ReadyWhenErrors = append(out.ReadyWhenErrors, evalError("spec.readyWhen", err).Error())
	case !ok:
		out.Waiting, out.WaitingReason = fmt.Sprintf("spec.readyWhen %q is not true yet", r.c.ReadyWhen.Source), contract.ReasonParentNotReady
	}
	return nil
}

// noChildIncluded says why a parent has no child: what left each entry out.
func noChildIncluded(c *policy.Compiled, excluded []string) string {
	if len(c.Children) == 0 {
		return "the policy has no child entry: set spec.readyWhen to say when the parent is ready"
	}
	return "no child is included (" + summarize(excluded) + "): set spec.readyWhen to say when the parent is ready without children"
}

// evalConditions computes the parent's own conditions (spec.conditions), checked as the API
// server checks a condition: a status of True, False or Unknown, a reason of one CamelCase word.
func (r *run) evalConditions() ([]Condition, error) {
	out := make([]Condition, 0, len(r.c.Conditions))
	for _, cc := range r.c.Conditions {
		v, err := cc.Fields.Eval(r.ctx, r.act, r.budget)
		if err != nil {
			return nil, evalError(cc.Path, err)
		}
		m, _ := v.(map[string]any)
		cond := Condition{Type: cc.Type, Status: fmt.Sprint(m["status"]), Reason: fmt.Sprint(m["reason"])}
		if msg, ok := m["message"]; ok && msg != nil {
			cond.Message = fmt.Sprint(msg)
		}
		if !policy.IsConditionStatus(cond.Status) {
			return nil, evalError(cc.Path+".status", fmt.Errorf("gave %q, which is not a condition status: it must give True, False or Unknown", cond.Status))
		}
		if msg := policy.CheckConditionReason(cond.Reason); msg != "" {
			return nil, evalError(cc.Path+".reason", fmt.Errorf("gave a value the API server refuses: %s", msg))
		}
		out = append(out, cond)
	}
	return out, nil
}
