package render

import (
	"context"
	"errors"
	"slices"
	"sort"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"metacel.dev/metacel/runtime/contract"
	"metacel.dev/metacel/runtime/expr"
	"metacel.dev/metacel/runtime/kinds"
	"metacel.dev/metacel/runtime/policy"
)

// Input is everything a render reads. Nothing in it is modified.
type Input struct {
	// Parent is the parent object.
	Parent *unstructured.Unstructured
	// Observed holds the children that exist, by child id.
	Observed map[string][]*unstructured.Unstructured
	// Related holds the related objects that exist, by related id; an entry with a name holds at
	// most one object.
	Related map[string][]*unstructured.Unstructured
	// Mapper resolves the kinds of child objects.
	Mapper kinds.Mapper
	// Budget is what is left of the sync's cost budget (expr.NewBudget, less what Related spent);
	// the render spends from it. Nil gives the render a full budget of its own.
	Budget *expr.Budget
	// Namespaces gives the labels of namespaces, for the consent labels of the policy's
	// confinement; nil knows none (no namespace has consented).
	Namespaces NamespaceLabels
	// ReservedNamespace is the namespace of the runtime's own records (its policy ConfigMaps,
	// rollout records, memos, ledger): no child is ever placed there, and no object there is a
	// child ("": none).
	ReservedNamespace string
	// CheckRecord: the observed objects come from the cluster, and the parent's record of its
	// children decides which of those without an ownerReference to it are its children
	// (ChildRecord); false (offline files) takes every object in reach.
	CheckRecord bool
	// Hold are entries held whatever they wait for: a render again after a sync's writes holds
	// what the first render held, whose children the sync did not write.
	Hold []Held
}

// Child is one desired child.
type Child struct {
	ID     string
	Object *unstructured.Unstructured
	// Resource is the child's resource and update method.
	Resource policy.ChildResourceInfo
	// DeletionPolicy applies when the child is no longer desired.
	DeletionPolicy policy.DeletionPolicy
	// Owned is true when the child carries a controller ownerReference to the parent; false for
	// cross-namespace and cluster-scoped children, which the parent's finalizer cleans up, and
	// for Orphan children, which it releases.
	Owned bool
	// Ready is the child's readiness: it exists and passes its readyWhen or, with none, its kind
	// says it is ready (runtime/readiness).
	Ready bool
	// Failed: its kind says it will not become ready without a change (a Job that failed).
	Failed bool
	// NotReadyBecause says why it is not ready ("" when it is): missing, being deleted, the
	// readyWhen that is not true yet or failed, or its kind's reason and message.
	NotReadyBecause string
	// LegacyHeld: the observed child was written by a runtime from before the content hash
	// (contract.AnnotationDesiredHash) and holds this child's content: only its bookkeeping
	// differs.
	LegacyHeld bool

	entry *policy.CompiledChild // the policy entry that produced it
}

// Held is a child entry that waits for another child, and what it waits for.
type Held struct {
	ID, Why string
}

// Output is what the policy wants for the parent.
type Output struct {
	Children []Child
	// Status holds the policy's status fields (conditions, observedGeneration are added by
	// NewStatus).
	Status map[string]any
	// NotReady names the children that are not ready yet, in order; a child its kind judged
	// (no readyWhen) with the kind's reason: "Deployment ns/web (LessAvailable: Available: 0/1)".
	NotReady []string
	// Held are the child entries not evaluated because they wait for a child that does not
	// exist yet, or is not ready yet: their existing children are kept as they are.
	Held []Held
	// Excluded says, for each child entry that gave no child, why: its includeWhen is false, its
	// forEach gave nothing.
	Excluded []string
	// Waiting says why the parent itself is not ready when its children are ("" when it is):
	// spec.readyWhen not true, or no child included; WaitingReason is the Ready reason it gives.
	Waiting, WaitingReason string
	// Own are the parent's own conditions (spec.conditions), in order.
	Own []Condition
	// Failed names the children that failed (runtime/readiness), in order, each with its reason:
	// "Job ns/migrate failed: DeadlineExceeded: Job was active longer than specified deadline".
	// They are in NotReady too.
	Failed []string
	// ReadyWhenErrors holds, for each child in NotReady whose readyWhen failed to evaluate, the
	// child and the error, in order: such a child is not ready, and the sync goes on
	// (judgeEachChild).
	ReadyWhenErrors []string
}

// Ready reports whether every desired child is ready.
func (o *Output) Ready() bool {
	return len(o.NotReady) == 0 && len(o.Failed) == 0 && len(o.ReadyWhenErrors) == 0 && o.Waiting == "" && len(o.Held) == 0
}

// Render computes the desired children and status of one parent.
func Render(ctx context.Context, c *policy.Compiled, in Input) (*Output, error) {
	r := newRun(ctx, c, in)
	if err := r.validate(); err != nil {
		return nil, err
	}
	if err := r.evalVariables(); err != nil {
		return nil, err
	}
	children, err := r.buildChildren()
	if err != nil {
		return nil, err
	}
	out := &Output{Children: children, Excluded: r.excluded, Held: r.held}
	if err := r.judgeEachChild(out); err != nil {
		return nil, err
	}
	if err := r.judgeParent(out); err != nil {
		return nil, err
	}
	if out.Status, err = r.evalStatus(); err != nil {
		return nil, err
	}
	if out.Own, err = r.evalConditions(); err != nil {
		return nil, err
	}
	return out, nil
}

// Rerender returns what Render returns for in, given last, what Render returned for the same
// input but for the observed children (a sync renders again with the children its writes
// returned). When no expression of the policy reads the children (c.ReadsChildren), the children
// and status it wants are last's: only their readiness is judged again, which costs the readyWhen
// rules and not a render. last is not modified.
func Rerender(ctx context.Context, c *policy.Compiled, in Input, last *Output) (*Output, error) {
	if c.ReadsChildren {
		return Render(ctx, c, in)
	}
	r := newRun(ctx, c, in)
	if err := r.evalVariables(); err != nil { // readyWhen may read them
		return nil, err
	}
	out := &Output{Children: slices.Clone(last.Children), Status: last.Status, Excluded: last.Excluded, Own: last.Own, Held: last.Held}
	if err := r.judgeEachChild(out); err != nil {
		return nil, err
	}
	if err := r.judgeParent(out); err != nil {
		return nil, err
	}
	return out, nil
}

// run is the state of one render.
type run struct {
	ctx    context.Context
	c      *policy.Compiled
	in     Input
	budget *expr.Budget
	vars   map[string]any
	act    expr.Activation
	// observed indexes in.Observed by Identity; built on first use (observedByIdentity)
	observed map[string]*unstructured.Unstructured
	// excluded says why each child entry that gave no child gave none (Output.Excluded)
	excluded []string
	// held are the entries that wait for another child (Output.Held)
	held []Held
}

func newRun(ctx context.Context, c *policy.Compiled, in Input) *run {
	budget := in.Budget
	if budget == nil {
		budget = expr.NewBudget()
	}
	r := &run{ctx: ctx, c: c, in: in, budget: budget, vars: map[string]any{}}
	r.act = expr.NewActivation(map[string]any{
		"parent":    c.ParentForCEL(in.Parent.Object),
		"related":   relatedValues(c, in.Related),
		"children":  observedValues(c, in.Observed),
		"variables": r.vars,
	})
	return r
}

// relatedValues binds each related id to its object (absent when not found) or list.
func relatedValues(c *policy.Compiled, related map[string][]*unstructured.Unstructured) map[string]any {
	out := make(map[string]any, len(c.Related))
	for _, rel := range c.Related {
		bind(out, rel.ID, rel.IsList(), related[rel.ID], rel.ForCEL)
	}
	return out
}

// observedValues binds each child id to its observed object (absent when none) or list.
func observedValues(c *policy.Compiled, observed map[string][]*unstructured.Unstructured) map[string]any {
	out := make(map[string]any, len(c.Children))
	for _, ch := range c.Children {
		bind(out, ch.ID, ch.IsList(), observed[ch.ID], ch.ForCEL)
	}
	return out
}

// bind sets out[id] to the objects, in a stable order, as a list or as the one object, each as
// forCEL gives it; no object leaves id absent.
func bind(out map[string]any, id string, isList bool, objs []*unstructured.Unstructured, forCEL func(map[string]any) map[string]any) {
	sorted := sortedObjects(objs)
	switch {
	case isList:
		out[id] = objects(sorted, forCEL)
	case len(sorted) > 0:
		out[id] = forCEL(sorted[0].Object)
	}
}

func objects(objs []*unstructured.Unstructured, forCEL func(map[string]any) map[string]any) []any {
	out := make([]any, len(objs))
	for i, o := range objs {
		out[i] = forCEL(o.Object)
	}
	return out
}

// sortedObjects orders objects by namespace and name, so that lists read the same every time.
func sortedObjects(objs []*unstructured.Unstructured) []*unstructured.Unstructured {
	out := append([]*unstructured.Unstructured(nil), objs...)
	sort.SliceStable(out, func(i, j int) bool { return objectKey(out[i]) < objectKey(out[j]) })
	return out
}

func objectKey(o *unstructured.Unstructured) string {
	return o.GetAPIVersion() + "/" + o.GetKind() + "/" + o.GetNamespace() + "/" + o.GetName()
}

// validate evaluates every validation; the failures' messages, together, are the error.
func (r *run) validate() error {
	var failed []string
	for _, v := range r.c.Validations {
		ok, err := v.Rule.EvalBool(r.ctx, r.act, r.budget)
		if err != nil {
			return evalError(v.Path+".expression", err)
		}
		if ok {
			continue
		}
		msg := v.Message
		if v.MessageExpr != nil {
			val, err := v.MessageExpr.Eval(r.ctx, r.act, r.budget)
			if err != nil {
				return evalError(v.Path+".messageExpression", err)
			}
			msg, _ = val.Value().(string)
		}
		failed = append(failed, msg)
	}
	if len(failed) > 0 {
		return &Error{Reason: contract.ReasonValidationFailed, Err: errors.New(strings.Join(failed, "; "))}
	}
	return nil
}

// evalVariables evaluates the variables in order; each sees those before it.
func (r *run) evalVariables() error {
	for _, v := range r.c.Variables {
		native, err := v.Expr.EvalNative(r.ctx, r.act, r.budget)
		if err != nil {
			return evalError(v.Path+".expression", err)
		}
		r.vars[v.Name] = native
	}
	return nil
}

// evalStatus computes the policy's status fields.
func (r *run) evalStatus() (map[string]any, error) {
	if r.c.Status == nil {
		return map[string]any{}, nil
	}
	v, err := r.c.Status.Eval(r.ctx, r.act, r.budget)
	if err != nil {
		return nil, evalError("spec.status", err)
	}
	m, _ := v.(map[string]any)
	if m == nil {
		m = map[string]any{}
	}
	return m, nil
}
