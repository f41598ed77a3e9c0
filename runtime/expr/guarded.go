package expr

import (
	"github.com/google/cel-go/common/ast"
	"github.com/google/cel-go/common/operators"
	"github.com/google/cel-go/common/types"
)

// SelectsUnguarded reports whether an expression selects field of variable (parent.status) with
// no guard anywhere in it: no has() of it, no optional selection of it (parent.?status). Such an
// expression fails on an object without that field ("no such key"), as a parent is before
// anything has written its status. One that guards it anywhere is taken to guard it everywhere:
// the check is for a read certain to fail, not a proof of one that cannot.
func (e *Env) SelectsUnguarded(src, variable, field string) bool {
	parsed, iss := e.cel.Parse(src)
	if iss.Err() != nil {
		return false
	}
	of := func(x ast.Expr) bool { return x.Kind() == ast.IdentKind && x.AsIdent() == variable }
	plain, guarded := false, false
	root := ast.NavigateAST(parsed.NativeRep())
	ast.MatchDescendants(root, func(n ast.NavigableExpr) bool {
		switch n.Kind() {
		case ast.SelectKind:
			if s := n.AsSelect(); s.FieldName() == field && of(s.Operand()) {
				if s.IsTestOnly() {
					guarded = true // has(parent.status)
				} else {
					plain = true
				}
			}
		case ast.CallKind:
			if c := n.AsCall(); c.FunctionName() == operators.OptSelect && len(c.Args()) == 2 && of(c.Args()[0]) {
				if lit := c.Args()[1]; lit.Kind() == ast.LiteralKind && lit.AsLiteral() == types.String(field) {
					guarded = true // parent.?status
				}
			}
		}
		return false
	})
	return plain && !guarded
}
