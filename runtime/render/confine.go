package render

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"metacel.dev/metacel/runtime/contract"
	"metacel.dev/metacel/runtime/expr"
	"metacel.dev/metacel/runtime/policy"
)

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
		why, err := reachable(ctx, c, c.Confinement.Related, "spec.confinement.relatedNamespaces", parent, ref.Namespace, labels, budget)
		if err != nil {
			return err
		}
		if why != "" {
			return &Error{Reason: contract.ReasonNamespaceNotAllowed, Path: "spec.related." + ref.ID, Err: fmt.Errorf(
				"reads %s in namespace %q, which this %s may not reach: %s", ref.Resource.Resource, ref.Namespace, parent.GetKind(), why)}
		}
	}
	return nil
}

// checkChildReach returns an error when a child is in a namespace the parent may not reach.
func (r *run) checkChildReach(ctx context.Context, ch *policy.CompiledChild, obj *unstructured.Unstructured) error {
	why, err := reachable(ctx, r.c, r.c.Confinement.Children, "spec.confinement.childNamespaces", r.in.Parent, obj.GetNamespace(), r.in.Namespaces, r.budget)
	if err != nil {
		return err
	}
	if why != "" {
		return &Error{Reason: contract.ReasonNamespaceNotAllowed, Path: ch.Path, Err: fmt.Errorf(
			"%s %s is in a namespace this %s may not reach: %s", obj.GetKind(), NamespacedName(obj), r.in.Parent.GetKind(), why)}
	}
	return nil
}

// reachable says why a parent of c may not reach namespace ns under rule, or "" when it may.
func reachable(ctx context.Context, c *policy.Compiled, rule *policy.CompiledNamespaceRule, path string, parent *unstructured.Unstructured, ns string, labels NamespaceLabels, budget *expr.Budget) (string, error) {
	own := parent.GetNamespace()
	if own == "" || ns == "" || ns == own {
		return "", nil
	}
	if rule == nil {
		return fmt.Sprintf("the policy reaches the parent's own namespace only (its %s allows others)", path), nil
	}
	named, err := rule.NamesNamespace(ctx, c.ParentForCEL(parent.Object), ns, budget)
	if err != nil {
		return fmt.Sprintf("%s does not name it", path), evalError(rule.Path+".expression", err)
	}
	if !named {
		return fmt.Sprintf("%s does not name it", path), nil
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

// checkNotReserved returns an error for a child placed in the reserved namespace, where the
// runtime keeps its own records: a policy ConfigMap or rollout record written there would be
// read as the runtime's own, whatever policy or parent wrote it.
func (r *run) checkNotReserved(ch *policy.CompiledChild, obj *unstructured.Unstructured) error {
	ns := obj.GetNamespace()
	if ns == "" || ns != r.in.ReservedNamespace {
		return nil
	}
	return &Error{Reason: contract.ReasonNamespaceNotAllowed, Path: ch.Path, Err: fmt.Errorf(
		"child %q: %s %s is in namespace %q, which holds the runtime's own records (its policies, rollout records and memos) and never a child: give the child another namespace",
		ch.ID, obj.GetKind(), NamespacedName(obj), ns)}
}

// ChildReach judges which namespaces the children of one parent may be in, as a render places
// them: the parent's own, and, under a namespaced parent, those the policy's
// spec.confinement.childNamespaces allows it (by name, by expression over the parent, by consent
// label); never the reserved namespace. Any client may give an object a parent's labels, and
// metacel's field manager name: an object outside this reach is no child of the parent, whoever
// wrote it, so it is neither bound, deleted, released nor cleaned up by the parent's finalizer, and
// never makes the parent take the finalizer. Each namespace is judged once.
type ChildReach struct {
	ctx    context.Context
	c      *policy.Compiled
	in     Input
	judged map[string]string // namespace: why it is out of reach, "" when it is not
}

// NewChildReach returns the reach of in.Parent's children under policy c, judged with
// in.Namespaces and in.ReservedNamespace; a confinement expression spends from in.Budget (nil: a
// budget of its own).
func NewChildReach(ctx context.Context, c *policy.Compiled, in Input) *ChildReach {
	if in.Budget == nil {
		in.Budget = expr.NewBudget()
	}
	return &ChildReach{ctx: ctx, c: c, in: in, judged: map[string]string{}}
}

// OutOfReach says why obj cannot be a child of the parent, for its namespace, or "" when it may
// be. A confinement expression that fails leaves the object out of reach, saying why: an object
// whose namespace cannot be judged is not touched.
func (cr *ChildReach) OutOfReach(obj *unstructured.Unstructured) string {
	ns := obj.GetNamespace()
	why, ok := cr.judged[ns]
	if !ok {
		why = cr.judge(ns)
		cr.judged[ns] = why
	}
	if why == "" {
		return ""
	}
	return fmt.Sprintf("it is in namespace %q, where this %s's children may not be: %s", ns, cr.in.Parent.GetKind(), why)
}

// judge says why namespace ns is out of the parent's reach, or "".
func (cr *ChildReach) judge(ns string) string {
	if ns != "" && ns == cr.in.ReservedNamespace {
		return "it holds the runtime's own records"
	}
	why, err := reachable(cr.ctx, cr.c, cr.c.Confinement.Children, "spec.confinement.childNamespaces", cr.in.Parent, ns, cr.in.Namespaces, cr.in.Budget)
	if err != nil {
		return fmt.Sprintf("its confinement cannot be judged: %v", err)
	}
	return why
}
