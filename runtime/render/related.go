package render

import (
	"context"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"metacel.dev/metacel/runtime/expr"
	"metacel.dev/metacel/runtime/policy"
)

// RelatedRef says which objects one related entry reads for a given parent.
type RelatedRef struct {
	ID        string
	Resource  schema.GroupVersionResource
	Namespace string
	// Name is set for one object; Selector for a list.
	Name     string
	Selector labels.Selector
}

// Matches reports whether obj is one of the objects the reference reads.
func (r RelatedRef) Matches(obj metav1.Object) bool {
	if r.Namespace != "" && obj.GetNamespace() != r.Namespace {
		return false
	}
	if r.Selector != nil {
		return r.Selector.Matches(labels.Set(obj.GetLabels()))
	}
	return obj.GetName() == r.Name
}

// RelatedInReach resolves the related entries of a policy for a parent (Related) and checks that
// each reads a namespace the parent may reach (CheckRelatedReach): the references a sync reads,
// in the runtime and in a preview alike. Its expressions spend from budget, as Related's.
func RelatedInReach(ctx context.Context, c *policy.Compiled, parent *unstructured.Unstructured, labels NamespaceLabels, budget *expr.Budget) ([]RelatedRef, error) {
	if budget == nil {
		budget = expr.NewBudget()
	}
	refs, err := Related(ctx, c, parent, budget)
	if err != nil {
		return nil, err
	}
	if err := CheckRelatedReach(ctx, c, parent, refs, labels, budget); err != nil {
		return nil, err
	}
	return refs, nil
}

// Related resolves the related entries of a policy for a parent: names, namespaces and selector
// labels are templates over the parent. A namespaced related resource defaults to the parent's
// namespace. Its expressions spend from budget, the sync's (pass the same to Render through
// Input.Budget); nil gives them a full budget of their own.
func Related(ctx context.Context, c *policy.Compiled, parent *unstructured.Unstructured, budget *expr.Budget) ([]RelatedRef, error) {
	act := expr.NewActivation(map[string]any{"parent": c.ParentForCEL(parent.Object)})
	if budget == nil {
		budget = expr.NewBudget()
	}
	str := func(t *expr.Template, path string) (string, error) {
		if t == nil {
			return "", nil
		}
		v, err := t.Eval(ctx, act, budget)
		if err != nil {
			return "", evalError(path, err)
		}
		s, _ := v.(string)
		return s, nil
	}
	out := make([]RelatedRef, 0, len(c.Related))
	for _, rel := range c.Related {
		ref := RelatedRef{ID: rel.ID, Resource: rel.GVR}
		var err error
		if ref.Namespace, err = str(rel.Namespace, rel.Path+".namespace"); err != nil {
			return nil, err
		}
		if ref.Namespace == "" && rel.Namespaced {
			ref.Namespace = parent.GetNamespace()
		}
		if ref.Name, err = str(rel.Name, rel.Path+".name"); err != nil {
			return nil, err
		}
		if rel.IsList() {
			sel := rel.Selector.DeepCopy()
			for k, t := range rel.SelectorLabels {
				if sel.MatchLabels[k], err = str(t, rel.Path+".selector.matchLabels"); err != nil {
					return nil, err
				}
			}
			if ref.Selector, err = metav1.LabelSelectorAsSelector(sel); err != nil {
				return nil, evalError(rel.Path+".selector", fmt.Errorf("invalid selector: %w", err))
			}
		} else if ref.Name == "" {
			return nil, evalError(rel.Path+".name", fmt.Errorf("evaluates to an empty name"))
		}
		out = append(out, ref)
	}
	return out, nil
}
