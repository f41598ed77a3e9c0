package gitops

import (
	"context"
	"fmt"

	"github.com/google/cel-go/cel"
	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/ext"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/cli-utils/pkg/kstatus/status"
)

// HealthCheckExprs is an entry of a Flux Kustomization's spec.healthCheckExprs.
type HealthCheckExprs struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind,omitempty"`
	Current    string `json:"current"`
	InProgress string `json:"inProgress,omitempty"`
	Failed     string `json:"failed,omitempty"`
}

// FluxHealth judges obj by exprs as Flux's StatusEvaluator does. An expression that fails to
// evaluate (one that reads a field obj does not have yet) is an error: Flux's status reader then
// counts the object Unknown, and its wait goes on until the object is Current or the timeout.
func FluxHealth(ctx context.Context, exprs HealthCheckExprs, obj *unstructured.Unstructured) (status.Status, error) {
	if exprs.Current == "" {
		return "", fmt.Errorf("expression current not specified")
	}
	observed, found, err := unstructured.NestedInt64(obj.Object, "status", "observedGeneration")
	if err == nil && found {
		if gen, found, err := unstructured.NestedInt64(obj.Object, "metadata", "generation"); err == nil && found && observed != gen {
			return status.InProgressStatus, nil
		}
	}
	for _, e := range []struct {
		expr   string
		status status.Status
	}{
		{exprs.InProgress, status.InProgressStatus},
		{exprs.Failed, status.FailedStatus},
		{exprs.Current, status.CurrentStatus},
	} {
		if e.expr == "" {
			continue
		}
		ok, err := evaluateBool(ctx, e.expr, obj.Object)
		if err != nil {
			return "", err
		}
		if ok {
			return e.status, nil
		}
	}
	return status.InProgressStatus, nil
}

// evaluateBool parses expr in Flux's CEL environment (runtime/cel: parsed, not checked, since
// custom resources have no fixed fields) and evaluates it over the object's top-level fields.
func evaluateBool(ctx context.Context, expr string, obj map[string]any) (bool, error) {
	env, err := cel.NewEnv(
		cel.HomogeneousAggregateLiterals(),
		cel.EagerlyValidateDeclarations(true),
		cel.DefaultUTCTimeZone(true),
		cel.CrossTypeNumericComparisons(true),
		cel.OptionalTypes(),
		ext.Strings(),
		ext.Sets(),
		ext.Encoders(),
	)
	if err != nil {
		return false, fmt.Errorf("create the CEL environment: %w", err)
	}
	ast, issues := env.Parse(expr)
	if issues != nil && issues.Err() != nil {
		return false, fmt.Errorf("parse %q: %w", expr, issues.Err())
	}
	prog, err := env.Program(ast, cel.EvalOptions(cel.OptOptimize), cel.InterruptCheckFrequency(100))
	if err != nil {
		return false, fmt.Errorf("program %q: %w", expr, err)
	}
	val, _, err := prog.ContextEval(ctx, obj)
	if err != nil {
		return false, fmt.Errorf("evaluate %q: %w", expr, err)
	}
	b, ok := val.(types.Bool)
	if !ok {
		return false, fmt.Errorf("%q is not a bool: %v", expr, val)
	}
	return bool(b), nil
}
