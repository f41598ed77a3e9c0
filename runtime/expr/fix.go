package expr

import (
	"fmt"
	"slices"
	"strings"

	"github.com/google/cel-go/cel"
	"github.com/google/cel-go/common/types"
)

// resultFix says how to write an expression of type got so that it returns what want asks
// (includeWhen's bool, forEach's list, a message's string), or "".
func (e *Env) resultFix(src string, want Want, got *cel.Type) string {
	switch want {
	case WantBool:
		return e.boolFix(src, got)
	case WantList:
		return e.listFix(src, got)
	case WantString:
		return stringFix(src, got)
	}
	return ""
}

// boolFix turns a value into a condition: a comparison, a size, a presence test.
func (e *Env) boolFix(src string, got *cel.Type) string {
	x := operand(src)
	switch got.Kind() {
	case types.IntKind, types.UintKind, types.DoubleKind:
		return "compare it, e.g. " + quote(x+" > 0")
	case types.StringKind:
		return "compare it with ==, e.g. " + quote(x+" == 'yes'")
	case types.ListKind, types.MapKind:
		return "test its size, e.g. " + quote("size("+src+") > 0")
	case types.StructKind:
		if fields := e.fieldsOf(got); len(fields) > 0 {
			slices.Sort(fields)
			return "test one of its fields, e.g. " + quote("has("+x+"."+fields[0]+")")
		}
	}
	switch {
	case isOptional(got) && got.Parameters()[0].Kind() == types.BoolKind:
		return "give it a default, e.g. " + quote(x+".orValue(false)")
	case isOptional(got):
		return "test whether it has a value: " + quote(x+".hasValue()")
	}
	return ""
}

// listFix turns a value into the list it likely holds or means: a list field of an object, an
// optional list with a default, a map's keys, a split string, a list of one.
func (e *Env) listFix(src string, got *cel.Type) string {
	x := operand(src)
	switch got.Kind() {
	case types.StructKind:
		if lists := e.listFieldsOf(got); len(lists) > 0 {
			for i, f := range lists {
				lists[i] = quote(x + "." + f)
			}
			if len(lists) == 1 {
				return "did you mean " + lists[0] + "?"
			}
			return "did you mean one of " + strings.Join(lists, ", ") + "?"
		}
	case types.MapKind:
		return "for its keys write " + quote(x+".map(k, k)")
	case types.StringKind:
		return "split it, e.g. " + quote(x+".split(',')")
	case types.BoolKind, types.IntKind, types.UintKind, types.DoubleKind:
		return "for a list of one item write " + quote("["+src+"]")
	}
	if isOptional(got) && got.Parameters()[0].Kind() == types.ListKind {
		return "give the list it may hold, or none: " + quote(x+".orValue([])")
	}
	return ""
}

// stringFix converts a number or a bool into a string.
func stringFix(src string, got *cel.Type) string {
	switch got.Kind() {
	case types.IntKind, types.UintKind, types.DoubleKind, types.BoolKind:
		return "convert it, e.g. " + quote("string("+src+")")
	}
	return ""
}

// isOptional reports whether t is an optional of one type.
func isOptional(t *cel.Type) bool {
	return t.Kind() == types.OpaqueKind && t.TypeName() == "optional_type" && len(t.Parameters()) == 1
}

// listFieldsOf returns the fields of an object type that hold lists, sorted.
func (e *Env) listFieldsOf(t *cel.Type) []string {
	if e.types == nil {
		return nil
	}
	dt, ok := e.types.FindDeclType(t.TypeName())
	if !ok {
		return nil
	}
	var out []string
	for _, name := range e.fieldsOf(t) {
		if f, ok := dt.Fields[name]; ok && f.Type != nil && f.Type.IsList() {
			out = append(out, name)
		}
	}
	slices.Sort(out)
	return out
}

// operand is an expression ready for an operator or a selection to follow it: in parentheses
// unless it is a plain selection (optional ones included) or call.
func operand(src string) string {
	if strings.ContainsAny(strings.ReplaceAll(src, ".?", "."), " ?:|&=<>!+-*/%") {
		return fmt.Sprintf("(%s)", src)
	}
	return src
}
