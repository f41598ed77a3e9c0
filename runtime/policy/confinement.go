package policy

import (
	"context"
	"fmt"
	"reflect"
	"slices"

	"metacel.dev/metacel/runtime/expr"
)

// CompiledConfinement is a policy's confinement, compiled; nil rules allow no other namespace.
type CompiledConfinement struct {
	Related, Children *CompiledNamespaceRule
}

// CompiledNamespaceRule is a compiled NamespaceRule.
type CompiledNamespaceRule struct {
	Path         string
	Names        []string
	Expression   *expr.Program // over parent, returning a list of namespace names; nil if none
	ConsentLabel string
}

// NamesNamespace reports whether the rule allows namespace ns by name for a parent (its object):
// ns is one of its names, or "*" is, or its expression over the parent returns ns, spending from
// b. A rule that names nothing leaves every namespace to consent: true. The error is its
// expression's, which fails or returns no list of names.
func (r *CompiledNamespaceRule) NamesNamespace(ctx context.Context, parent map[string]any, ns string, b *expr.Budget) (bool, error) {
	if !r.namesSome() || r.anyName() || slices.Contains(r.Names, ns) {
		return true, nil
	}
	if r.Expression == nil {
		return false, nil
	}
	v, err := r.Expression.Eval(ctx, expr.NewActivation(map[string]any{"parent": parent}), b)
	if err != nil {
		return false, err
	}
	names, err := v.ConvertToNative(reflect.TypeOf([]string{}))
	if err != nil {
		return false, fmt.Errorf("must return a list of namespace names: %w", err)
	}
	return slices.Contains(names.([]string), ns), nil
}

// anyName reports whether the rule names every namespace ("*").
func (r *CompiledNamespaceRule) anyName() bool { return slices.Contains(r.Names, "*") }

// namesSome reports whether the rule allows by name at all (else consent alone decides).
func (r *CompiledNamespaceRule) namesSome() bool { return len(r.Names) > 0 || r.Expression != nil }

// ConsentLabels are the consent labels of a policy's rules: a controller that has some watches
// Namespaces to read them.
func (c *CompiledConfinement) ConsentLabels() []string {
	var out []string
	for _, r := range []*CompiledNamespaceRule{c.Related, c.Children} {
		if r != nil && r.ConsentLabel != "" {
			out = append(out, r.ConsentLabel)
		}
	}
	return out
}

// confinement compiles spec.confinement; the expressions read parent only.
func (c *compiler) confinement() CompiledConfinement {
	conf := c.spec.Confinement
	if conf == nil {
		return CompiledConfinement{}
	}
	return CompiledConfinement{
		Related:  c.namespaceRule("spec.confinement.relatedNamespaces", conf.RelatedNamespaces),
		Children: c.namespaceRule("spec.confinement.childNamespaces", conf.ChildNamespaces),
	}
}

func (c *compiler) namespaceRule(path string, r *NamespaceRule) *CompiledNamespaceRule {
	if r == nil {
		return nil
	}
	out := &CompiledNamespaceRule{Path: path, Names: r.Names, ConsentLabel: r.ConsentLabel}
	out.Expression = c.program(c.parentEnv, r.Expression, path+".expression", expr.WantList)
	return out
}
