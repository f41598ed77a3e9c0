package expr

import (
	"github.com/google/cel-go/cel"
	"github.com/google/cel-go/common/ast"
	"github.com/google/cel-go/common/types"
	apiservercel "k8s.io/apiserver/pkg/cel"
)

// A field whose name is no CEL identifier (a-b, a.b, a__b, a keyword) is declared, as
// Kubernetes' CEL library declares a schema's fields, under its escaped name (a__dash__b), and
// an expression selects it so (parent.spec.a__dash__b); the API server's CEL reads objects through
// the schema, which finds the field. metacel binds plain maps, whose keys are the names
// themselves: once an expression is checked, unescapeSelections renames what it selects to the
// field's own name, so that the map is read as it is (a copy of the object with escaped keys
// would leak them into children built from it whole).

// unescapeSelections renames, in a checked expression, each field of an object type selected by
// an escaped name (x.a__dash__b, has(x.a__dash__b), x.?a__dash__b) to the name it escapes; a map's
// keys are left as written. The types the check gave stay theirs: nodes keep their ids.
func unescapeSelections(a *cel.Ast) {
	fac := ast.NewExprFactory()
	checked := a.NativeRep()
	ofObject := func(operand ast.Expr) bool { // a map's keys are no declared fields
		return UnwrapOptional(checked.GetType(operand.ID())).Kind() == types.StructKind
	}
	ast.PostOrderVisit(checked.Expr(), ast.NewExprVisitor(func(e ast.Expr) {
		switch e.Kind() {
		case ast.SelectKind:
			sel := e.AsSelect()
			name, ok := unescaped(sel.FieldName())
			if !ok || !ofObject(sel.Operand()) {
				return
			}
			if sel.IsTestOnly() {
				e.SetKindCase(fac.NewPresenceTest(e.ID(), sel.Operand(), name))
				return
			}
			e.SetKindCase(fac.NewSelect(e.ID(), sel.Operand(), name))
		case ast.CallKind:
			call := e.AsCall()
			if call.FunctionName() != "_?._" || len(call.Args()) != 2 || call.Args()[1].Kind() != ast.LiteralKind || !ofObject(call.Args()[0]) {
				return
			}
			field := call.Args()[1]
			s, isString := field.AsLiteral().(types.String)
			if !isString {
				return
			}
			if name, ok := unescaped(string(s)); ok {
				field.SetKindCase(fac.NewLiteral(field.ID(), types.String(name)))
			}
		}
	}))
}

// unescaped returns the name an escaped field name stands for, when it is one.
func unescaped(field string) (string, bool) {
	name, ok := apiservercel.Unescape(field)
	return name, ok && name != field
}
