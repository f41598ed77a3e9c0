package expr

import (
	"github.com/google/cel-go/cel"
	celast "github.com/google/cel-go/common/ast"
	"github.com/google/cel-go/common/types"
)

// A template field's whole value may leave the field out: "${cond ? value : null}". CEL's
// conditional needs both branches of one type, and null is of its own type, so that expression
// does not type-check as written. Where it is a whole value (the value itself, or a branch of a
// conditional that is), a null branch is typed dyn instead, as dyn(null) would be: the other
// branch keeps its type, the result is dyn, and null at run time leaves the field out (exprNode).

// dynNullBranches rewrites, in place, the null branches of the conditionals that give a parsed
// expression's value into dyn(null).
func dynNullBranches(ast *cel.Ast) {
	root := ast.NativeRep().Expr()
	next := maxID(ast) + 1
	fac := celast.NewExprFactory()
	var visit func(x celast.Expr)
	visit = func(x celast.Expr) {
		if x.Kind() != celast.CallKind || x.AsCall().FunctionName() != "_?_:_" || len(x.AsCall().Args()) != 3 {
			return
		}
		branches := x.AsCall().Args()[1:]
		for i, b := range branches {
			if isNullLiteral(b) && !isNullLiteral(branches[1-i]) {
				b.SetKindCase(fac.NewCall(0, "dyn", fac.NewLiteral(next, types.NullValue)))
				next++
			}
			visit(b)
		}
	}
	visit(root)
}

func isNullLiteral(x celast.Expr) bool {
	return x.Kind() == celast.LiteralKind && x.AsLiteral() == types.NullValue
}

// maxID returns the largest expression id of a parsed expression, macros' included.
func maxID(ast *cel.Ast) int64 {
	var m int64
	celast.PostOrderVisit(ast.NativeRep().Expr(), celast.NewExprVisitor(func(x celast.Expr) { m = max(m, x.ID()) }))
	info := ast.NativeRep().SourceInfo()
	for id := range info.OffsetRanges() {
		m = max(m, id)
	}
	for id := range info.MacroCalls() {
		m = max(m, id)
	}
	return m
}
