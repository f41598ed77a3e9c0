package render

import (
	"context"
	"fmt"
	"reflect"
	"slices"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"metacel.dev/metacel/runtime/expr"
	"metacel.dev/metacel/runtime/policy"
)

// ReasonNamespaceNotAllowed is the reason of a sync that would read or write in a namespace the
// policy's confinement does not let the parent reach.
const ReasonNamespaceNotAllowed = "NamespaceNotAllowed"

// NamespaceLabels returns the labels of a namespace; ok is false when it is not known.
type NamespaceLabels func(name string) (labels map[string]string, ok bool)

// The author of a namespaced parent chooses, through its spec, the namespaces its related objects
// are read from and its crossNamespace children written to; the runtime's permissions reach every
// namespace. Confinement keeps the parent's author within the policy author's bounds: its own
// namespace, and the others the policy allows by name (names, or an expression over the parent)
// and, with a consent label, only those whose owners opted in. A cluster-scoped parent (whose
// author is cluster-wide already) and a cluster-scoped object are not confined.

// CheckRelatedReach returns an error for the first related reference that reads a namespace the
// parent may not reach.
func CheckRelatedReach(ctx context.Context, c *policy.Compiled, parent *unstructured.Unstructured, refs []RelatedRef, labels NamespaceLabels, budget *expr.Budget) error {
	for _, ref := range refs {
		why, err := reachable(ctx, c.Confinement.Related, "spec.confinement.relatedNamespaces", parent, ref.Namespace, labels, budget)
		if err != nil {
			return err
		}
		if why != "" {
			return &Error{Reason: ReasonNamespaceNotAllowed, Path: "spec.related." + ref.ID, Err: fmt.Errorf(
				"reads %s in namespace %q, which this %s may not reach: %s", ref.Resource.Resource, ref.Namespace, parent.GetKind(), why)}
		}
	}
	return nil
}

// checkChildReach returns an error when a child is in a namespace the parent may not reach.
func (r *run) checkChildReach(ctx context.Context, ch *policy.CompiledChild, obj *unstructured.Unstructured) error {
	why, err := reachable(ctx, r.c.Confinement.Children, "spec.confinement.childNamespaces", r.in.Parent, obj.GetNamespace(), r.in.Namespaces, r.budget)
	if err != nil {
		return err
	}
	if why != "" {
		return &Error{Reason: ReasonNamespaceNotAllowed, Path: ch.Path, Err: fmt.Errorf(
			"%s %s is in a namespace this %s may not reach: %s", obj.GetKind(), NamespacedName(obj), r.in.Parent.GetKind(), why)}
	}
	return nil
}

// reachable says why a parent may not reach namespace ns under rule, or "" when it may.
func reachable(ctx context.Context, rule *policy.CompiledNamespaceRule, path string, parent *unstructured.Unstructured, ns string, labels NamespaceLabels, budget *expr.Budget) (string, error) {
	own := parent.GetNamespace()
	if own == "" || ns == "" || ns == own {
		return "", nil
	}
	if rule == nil {
		return fmt.Sprintf("the policy reaches the parent's own namespace only (its %s allows others)", path), nil
	}
	named, err := namesNamespace(ctx, rule, parent, ns, budget)
	if err != nil || !named {
		return fmt.Sprintf("%s does not name it", path), err
	}
	if rule.ConsentLabel == "" {
		return "", nil
	}
	if labels == nil {
		labels = func(string) (map[string]string, bool) { return nil, false }
	}
	if l, ok := labels(ns); !ok || l[rule.ConsentLabel] != "true" {
		return fmt.Sprintf("namespace %q has not opted in: its owners label it %s=true to allow it", ns, rule.ConsentLabel), nil
	}
	return "", nil
}

// namesNamespace reports whether a rule allows ns by name; a rule that names nothing leaves it
// to consent.
func namesNamespace(ctx context.Context, rule *policy.CompiledNamespaceRule, parent *unstructured.Unstructured, ns string, budget *expr.Budget) (bool, error) {
	if !rule.NamesSome() || rule.AnyName() || slices.Contains(rule.Names, ns) {
		return true, nil
	}
	if rule.Expression == nil {
		return false, nil
	}
	v, err := rule.Expression.Eval(ctx, expr.NewActivation(map[string]any{"parent": parent.Object}), budget)
	if err != nil {
		return false, evalError(rule.Path+".expression", err)
	}
	names, err := v.ConvertToNative(reflect.TypeOf([]string{}))
	if err != nil {
		return false, evalError(rule.Path+".expression", fmt.Errorf("must return a list of namespace names: %w", err))
	}
	return slices.Contains(names.([]string), ns), nil
}
