package expr

import (
	"sync/atomic"

	"github.com/google/cel-go/cel"
	"github.com/google/cel-go/common/ast"
)

// Reads records what the expressions compiled in the environments of one policy may read of their
// inputs, so that the runtime knows which changes cannot change a render. It is set at load, when
// the expressions are checked, and read after; its zero value has recorded nothing.
type Reads struct {
	parentStatus, children atomic.Bool
	// childReads are the fields of the children the expressions read (fields.go)
	childReads childReads
}

// ParentStatus reports whether an expression may read the parent's status: one selects
// parent.status, or uses parent otherwise than by selecting one of its fields by name (passes it
// whole to a function, indexes it, selects a field optionally).
func (r *Reads) ParentStatus() bool { return r != nil && r.parentStatus.Load() }

// Children reports whether an expression may read the observed children: one names the
// variable children.
func (r *Reads) Children() bool { return r != nil && r.children.Load() }

// record notes what a checked expression may read.
func (r *Reads) record(checked *cel.Ast) {
	if r == nil {
		return
	}
	if mayReadField(checked, "parent", "status") {
		r.parentStatus.Store(true)
	}
	if names(checked, "children") {
		r.children.Store(true)
	}
	r.childReads.record(checked)
}

// names reports whether an expression names a variable.
func names(checked *cel.Ast, variable string) bool { return len(uses(checked, variable)) > 0 }

// uses returns the places where an expression names a variable.
func uses(checked *cel.Ast, variable string) []ast.NavigableExpr {
	root := ast.NavigateAST(checked.NativeRep())
	return ast.MatchDescendants(root, func(e ast.NavigableExpr) bool {
		return e.Kind() == ast.IdentKind && e.AsIdent() == variable
	})
}

// mayReadField reports whether an expression may read a field of a variable: it does unless every
// use of the variable selects another field of it by name.
func mayReadField(checked *cel.Ast, variable, field string) bool {
	for _, e := range uses(checked, variable) {
		p, ok := e.Parent()
		if !ok || p.Kind() != ast.SelectKind || p.AsSelect().FieldName() == field {
			return true
		}
	}
	return false
}

// Unrecorded returns the environment without its Reads: what it compiles is not part of a sync
// (a rollout's health rule).
func (e *Env) Unrecorded() *Env {
	out := *e
	out.reads = nil
	return &out
}
