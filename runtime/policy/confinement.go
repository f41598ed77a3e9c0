package policy

import "metacel.dev/metacel/runtime/expr"

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

// AnyName reports whether the rule names every namespace ("*").
func (r *CompiledNamespaceRule) AnyName() bool {
	for _, n := range r.Names {
		if n == "*" {
			return true
		}
	}
	return false
}

// NamesSome reports whether the rule allows by name at all (else consent alone decides).
func (r *CompiledNamespaceRule) NamesSome() bool { return len(r.Names) > 0 || r.Expression != nil }

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
