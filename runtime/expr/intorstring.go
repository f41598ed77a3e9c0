package expr

import (
	"fmt"

	"github.com/google/cel-go/cel"
	celast "github.com/google/cel-go/common/ast"
	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/parser"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiservercel "k8s.io/apiserver/pkg/cel"
	"k8s.io/apiserver/pkg/cel/common"
)

// A field that holds an integer or a string (an int-or-string, a quantity) is dyn to CEL, as
// Kubernetes types it: an expression may compare it with either. Written whole into a field that
// takes a number, it may be a string the API server refuses; so the declared types mark such
// fields (in their DeclType's Metadata, under intOrStringKey, which survives the naming of object
// types), and a compiled expression typed dyn says which of them, or which string, it may give
// (Program.MayGiveString).

// intOrStringKey marks a declared type that holds an integer or a string: its value is what the
// field is, IntOrString or Quantity.
const intOrStringKey = "metacel.dev/int-or-string"

// What a value typed dyn may be, as StringSource.What says it.
const (
	// IntOrString is a field of an int-or-string (intstr.IntOrString, x-kubernetes-int-or-string).
	IntOrString = "int-or-string"
	// Quantity is a field of a quantity (resource.Quantity).
	Quantity = "quantity"
	// String is a string: an orValue default, a conditional's branch.
	String = "string"
)

// markIntOrString marks a declared type as holding an integer or a string.
func markIntOrString(t *apiservercel.DeclType, what string) {
	if t == nil || t == apiservercel.DynType {
		return // a shared type: the schema's own dyn is a fresh one
	}
	if t.Metadata == nil {
		t.Metadata = map[string]string{}
	}
	t.Metadata[intOrStringKey] = what
}

// intOrStringOf returns what a declared type that holds an integer or a string is; "" for any
// other type.
func intOrStringOf(t *apiservercel.DeclType) string {
	if t == nil {
		return ""
	}
	return t.Metadata[intOrStringKey]
}

// markProps marks the int-or-string fields of a CRD's schema in the type built from it, walking
// both. It reads the schema as written: what loosen leaves open (an object that keeps unknown
// fields) holds any value, not an integer or a string.
func markProps(s *apiextensionsv1.JSONSchemaProps, t *apiservercel.DeclType) {
	if s == nil || t == nil {
		return
	}
	if s.XIntOrString {
		markIntOrString(t, IntOrString)
		return
	}
	for name, p := range s.Properties {
		markProps(&p, fieldOf(t, name))
	}
	if s.Items != nil && s.Items.Schema != nil {
		markProps(s.Items.Schema, t.ElemType)
	}
	if s.AdditionalProperties != nil && s.AdditionalProperties.Schema != nil {
		markProps(s.AdditionalProperties.Schema, t.ElemType)
	}
}

// intOrStringSchema is a schema that says what an open value holding an integer or a string is
// (kinds' CELSchema of a built-in kind: a quantity, an int-or-string, or neither).
type intOrStringSchema interface {
	IntOrString() string
}

// markSchema marks the int-or-string fields of a schema as Kubernetes' CEL library reads one in the
// type built from it, walking both: a schema that says what its open values are marks those it
// names; any other marks each x-kubernetes-int-or-string.
func markSchema(s common.Schema, t *apiservercel.DeclType) {
	if s == nil || t == nil {
		return
	}
	if s.IsXIntOrString() {
		what := IntOrString
		if k, ok := s.(intOrStringSchema); ok {
			what = k.IntOrString()
		}
		if what != "" {
			markIntOrString(t, what)
		}
		return
	}
	switch {
	case t.IsObject():
		for name, p := range s.Properties() {
			markSchema(p, fieldOf(t, name))
		}
	case t.IsList():
		markSchema(s.Items(), t.ElemType)
	case t.IsMap():
		if ap := s.AdditionalProperties(); ap != nil {
			markSchema(ap.Schema(), t.ElemType)
		}
	}
}

// fieldOf returns the type of an object's field: declared as named (an id of children), or
// escaped as Kubernetes' CEL library declares a schema's fields (__namespace__); nil when the
// object has no such field.
func fieldOf(t *apiservercel.DeclType, name string) *apiservercel.DeclType {
	if f, ok := t.Fields[name]; ok {
		return f.Type
	}
	if escaped, ok := apiservercel.Escape(name); ok {
		if f, ok := t.Fields[escaped]; ok {
			return f.Type
		}
	}
	return nil
}

// StringSource is what may make a value typed dyn a string.
type StringSource struct {
	// Expr is the part of the expression that gives it, as CEL writes it.
	Expr string
	// Whole is true when that part is the whole expression.
	Whole bool
	// What it is: IntOrString, Quantity or String.
	What string
}

func (s *StringSource) String() string {
	what := s.Expr
	if s.Whole {
		what = "it"
	}
	switch s.What {
	case Quantity:
		return fmt.Sprintf("%s is a quantity, a string such as \"64Mi\" or a number", what)
	case IntOrString:
		return fmt.Sprintf("%s is an int-or-string, a number or a string", what)
	}
	return what + " is a string"
}

// MayGiveString returns what may make the value of an expression typed dyn a string: a field it
// reads that holds an integer or a string, or a string it gives otherwise (an orValue default, a
// conditional's branch); nil when nothing says so, or when the expression has a type of its own.
// A value passed through dyn() is the author's to answer for.
func (p *Program) MayGiveString() *StringSource { return p.mayGiveString }

// stringSource finds what may make the value of a checked expression a string (MayGiveString).
func (e *Env) stringSource(a *cel.Ast) *StringSource {
	native := a.NativeRep()
	w := &pathWalk{roots: e.typeRoots, paths: map[int64][]string{}, types: native.TypeMap(), locals: map[string][]string{}}
	w.walk(native.Expr())
	s := &stringSearch{roots: e.typeRoots, paths: w.paths, types: w.types, info: native.SourceInfo()}
	src := s.of(native.Expr())
	if src != nil {
		src.Whole = src.Expr == s.text(native.Expr())
	}
	return src
}

// stringSearch follows an expression's value back to where it may come from: the branches of a
// conditional, an optional's value and its orValue default.
type stringSearch struct {
	roots map[string]*apiservercel.DeclType
	paths map[int64][]string
	types map[int64]*types.Type
	info  *celast.SourceInfo
}

func (s *stringSearch) of(e celast.Expr) *StringSource {
	if t := s.types[e.ID()]; t != nil && t.Kind() == types.StringKind {
		return &StringSource{Expr: s.text(e), What: String}
	}
	if what := intOrStringOf(typeAt(s.roots, s.paths[e.ID()])); what != "" {
		return &StringSource{Expr: s.text(e), What: what}
	}
	if e.Kind() != celast.CallKind {
		return nil
	}
	c := e.AsCall()
	var from []celast.Expr
	switch c.FunctionName() {
	case "_?_:_":
		from = c.Args()[1:]
	case "orValue", "value":
		if c.IsMemberFunction() {
			from = append([]celast.Expr{c.Target()}, c.Args()...)
		}
	case "optional.of", "optional.ofNonZeroValue":
		from = c.Args()
	}
	for _, f := range from {
		if src := s.of(f); src != nil {
			return src
		}
	}
	return nil
}

// typeAt walks a path such as [children web spec @items name] through the declared types of roots,
// a field of a map (limits.cpu) to its values' type; nil when a step is not declared.
func typeAt(roots map[string]*apiservercel.DeclType, path []string) *apiservercel.DeclType {
	if len(path) == 0 {
		return nil
	}
	t := roots[path[0]]
	for _, name := range path[1:] {
		switch {
		case t == nil:
			return nil
		case name == "@items" || name == "@values":
			t = t.ElemType
		case name == "@keys":
			t = t.KeyType
		case t.IsMap():
			t = t.ElemType
		default:
			t = fieldOf(t, name)
		}
	}
	return t
}

// text writes a part of an expression as CEL does.
func (s *stringSearch) text(e celast.Expr) string {
	text, err := parser.Unparse(e, s.info)
	if err != nil {
		return "a value"
	}
	return text
}
