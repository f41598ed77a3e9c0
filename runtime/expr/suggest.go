package expr

import (
	"slices"
	"strings"

	"github.com/google/cel-go/cel"
	celast "github.com/google/cel-go/common/ast"
	"github.com/google/cel-go/common/types"

	"metacel.dev/metacel/runtime/fieldpath"
)

// suggestions proposes, per expression id of a compile issue, what a misspelt name likely meant:
// a field of the operand's type for "undefined field", a declared variable or function for
// "undeclared reference".
func (e *Env) suggestions(src string, iss *cel.Issues) map[int64]string {
	out := map[int64]string{}
	var undefined []int64
	for _, is := range iss.Errors() {
		if name, ok := quotedName(is.Message, "undeclared reference to '"); ok {
			out[is.ExprID] = e.undeclaredHint(name)
		}
		if _, ok := quotedName(is.Message, "undefined field '"); ok {
			undefined = append(undefined, is.ExprID)
		}
	}
	if len(undefined) > 0 {
		for id, s := range e.fieldSuggestions(src, undefined) {
			out[id] = s
		}
	}
	return out
}

// undeclaredHint proposes what an undeclared name likely meant: a declared variable close to it;
// for index beside a forEach's each, what to name the children by instead.
func (e *Env) undeclaredHint(name string) string {
	declared := e.declaredNames()
	if name == "index" && slices.Contains(declared, "each") {
		return ` (forEach gives each item as each, and no index: name the children by a field of each, ` +
			`e.g. "${parent.metadata.name}-${each.name}", so that a child keeps its name when the list changes)`
	}
	return fieldpath.DidYouMean(name, declared)
}

// quotedName returns the name quoted after prefix in a checker's message.
func quotedName(msg, prefix string) (string, bool) {
	_, rest, ok := strings.Cut(msg, prefix)
	if !ok {
		return "", false
	}
	name, _, ok := strings.Cut(rest, "'")
	return name, ok
}

// declaredNames returns the variables of the environment.
func (e *Env) declaredNames() []string {
	var names []string
	for _, v := range e.cel.Variables() {
		names = append(names, v.Name())
	}
	return names
}

// fieldSuggestions finds the type of the operand of each undefined field selection (ids), and
// proposes the closest of its fields. To learn the operand's type, it checks the expression again
// with each bad selection x.f replaced by dyn(x), which type-checks as far as the field would.
func (e *Env) fieldSuggestions(src string, ids []int64) map[int64]string {
	ast, iss := e.cel.Parse(src)
	if iss.Err() != nil {
		return nil
	}
	nodes := map[int64]celast.Expr{}
	celast.PreOrderVisit(ast.NativeRep().Expr(), celast.NewExprVisitor(func(x celast.Expr) { nodes[x.ID()] = x }))
	fac := celast.NewExprFactory()
	operands := map[int64]selection{}
	for _, id := range ids {
		sel, ok := selectionOf(nodes[id])
		if !ok {
			continue
		}
		operands[id] = sel
		nodes[id].SetKindCase(fac.NewCall(0, "dyn", sel.operand))
	}
	checked, iss := e.cel.Check(ast)
	if iss.Err() != nil {
		return nil
	}
	out := map[int64]string{}
	for id, sel := range operands {
		out[id] = fieldpath.DidYouMean(sel.field, e.fieldsOf(checked.NativeRep().GetType(sel.operand.ID())))
	}
	return out
}

// selection is a field selection: operand.field, operand.?field or has(operand.field).
type selection struct {
	operand celast.Expr
	field   string
}

func selectionOf(x celast.Expr) (selection, bool) {
	switch {
	case x == nil:
		return selection{}, false
	case x.Kind() == celast.SelectKind:
		return selection{x.AsSelect().Operand(), x.AsSelect().FieldName()}, true
	case x.Kind() == celast.CallKind && x.AsCall().FunctionName() == "_?._" && len(x.AsCall().Args()) == 2:
		args := x.AsCall().Args()
		if args[1].Kind() == celast.LiteralKind {
			if s, ok := args[1].AsLiteral().(types.String); ok {
				return selection{args[0], string(s)}, true
			}
		}
	}
	return selection{}, false
}

// fieldsOf returns the field names of an object type the environment declares (the parent's
// schema, children, related, variables), as expressions write them.
func (e *Env) fieldsOf(t *types.Type) []string {
	if t == nil || e.types == nil {
		return nil
	}
	if t.Kind() == types.OpaqueKind && t.TypeName() == "optional_type" && len(t.Parameters()) == 1 {
		t = t.Parameters()[0]
	}
	dt, ok := e.types.FindDeclType(t.TypeName())
	if !ok || dt.Fields == nil {
		return nil
	}
	names := make([]string, 0, len(dt.Fields))
	for name := range dt.Fields {
		if n := strings.TrimSuffix(strings.TrimPrefix(name, "__"), "__"); n != name && fieldpath.IsIdentifier(n) {
			name = n // a field named by a CEL keyword, declared escaped
		}
		if fieldpath.IsIdentifier(name) {
			names = append(names, name)
		}
	}
	return names
}
