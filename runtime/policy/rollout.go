package policy

import (
	"context"
	"fmt"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"

	"metacel.dev/metacel/runtime/expr"
	"metacel.dev/metacel/runtime/hashslot"
)

// defaultHealthDeadline is how long a rollout step's parents have to become healthy when the
// policy does not say (spec.rollout.healthDeadlineSeconds).
const defaultHealthDeadline = 5 * time.Minute

// CompiledRollout is a compiled spec.rollout: how a new version of the policy reaches its parents.
type CompiledRollout struct {
	// Steps are the shares of parents on the new version, strictly increasing, the last 100.
	Steps []CompiledRolloutStep
	// Health, when not nil, is the health rule over parent (a bool); nil: the Ready condition.
	Health *expr.Program
	// HealthDeadline is how long a step's parents have to become healthy.
	HealthDeadline time.Duration
	// FailureBudget is how many moved parents may stay unhealthy at the deadline: a count or a
	// validated percentage ("10%"); see Budget.
	FailureBudget intstr.IntOrString
}

// CompiledRolloutStep is one step of a rollout.
type CompiledRolloutStep struct {
	// Percent is the share of parents on the new version after this step, 1 to 100.
	Percent int
	// Pause is how long to wait once the step's parents are healthy.
	Pause time.Duration
}

// Share returns the percent of parents on the new version at step (from 0): 0 before the
// first step, 100 past the last.
func (r *CompiledRollout) Share(step int) int {
	switch {
	case step < 0:
		return 0
	case step >= len(r.Steps):
		return 100
	}
	return r.Steps[step].Percent
}

// Budget returns how many of moved parents may stay unhealthy at the deadline: the count, or the
// percentage of moved, rounded down.
func (r *CompiledRollout) Budget(moved int) int {
	if r.FailureBudget.Type == intstr.Int {
		return int(r.FailureBudget.IntVal)
	}
	pct, _ := percentage(r.FailureBudget.StrVal) // validated
	return pct * moved / 100
}

// RolloutBucket places a parent in a rollout: a bucket in [0, 100) from the 64-bit FNV-1a hash
// of its UID, the same in every process and every run. A parent is on the new version at step s
// iff RolloutBucket(uid) < Share(s), so each step moves the parents of the previous steps and
// more, in an order that does not depend on names or on the time they were created.
func RolloutBucket(uid types.UID) int {
	return int(hashslot.Hash(uid) % 100)
}

// Healthy reports whether a parent is healthy on the new version: the health rule, or without
// one, its Ready condition True and no Synced condition False. why says, when it is not, why in a
// few words. err is an evaluation error of the health rule (over its cost budget, say).
func (r *CompiledRollout) Healthy(ctx context.Context, parent *unstructured.Unstructured) (ok bool, why string, err error) {
	if parent == nil {
		return false, "the parent does not exist", nil
	}
	if r.Health == nil {
		ok, why = readyCondition(parent)
		return ok, why, nil
	}
	act := expr.NewActivation(map[string]any{"parent": parent.Object})
	ok, err = r.Health.EvalBool(ctx, act, expr.NewBudget())
	if err != nil {
		return false, "", fmt.Errorf("spec.rollout.health: %w", err)
	}
	if !ok {
		return false, "health expression returned false", nil
	}
	return true, "", nil
}

// readyCondition is the default health rule: Ready is True, for the parent's generation when the
// condition says which, and Synced is not False.
func readyCondition(parent *unstructured.Unstructured) (bool, string) {
	conds := conditions(parent)
	if c, ok := conds["Synced"]; ok && c["status"] == "False" {
		return false, describeCondition("Synced", c)
	}
	c, ok := conds["Ready"]
	switch {
	case !ok:
		return false, "no Ready condition yet"
	case c["status"] != "True":
		return false, describeCondition("Ready", c)
	}
	if g, ok := c["observedGeneration"].(int64); ok && g < parent.GetGeneration() {
		return false, fmt.Sprintf("Ready is for generation %d, not the current %d", g, parent.GetGeneration())
	}
	return true, ""
}

// conditions indexes status.conditions by type; malformed entries are skipped.
func conditions(parent *unstructured.Unstructured) map[string]map[string]any {
	list, _, _ := unstructured.NestedFieldNoCopy(parent.Object, "status", "conditions")
	items, _ := list.([]any)
	out := make(map[string]map[string]any, len(items))
	for _, item := range items {
		if c, ok := item.(map[string]any); ok {
			if t, ok := c["type"].(string); ok {
				out[t] = c
			}
		}
	}
	return out
}

// describeCondition reads "Ready is False: Reason: message", leaving out what is empty.
func describeCondition(typ string, c map[string]any) string {
	status, _ := c["status"].(string)
	if status == "" {
		status = "unknown"
	}
	parts := []string{fmt.Sprintf("%s is %s", typ, status)}
	for _, k := range []string{"reason", "message"} {
		if s, _ := c[k].(string); s != "" {
			parts = append(parts, s)
		}
	}
	return strings.Join(parts, ": ")
}
