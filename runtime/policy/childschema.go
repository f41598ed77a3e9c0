package policy

import (
	"fmt"
	"strings"

	"github.com/google/cel-go/cel"
	"github.com/google/cel-go/common/types"
	"k8s.io/apimachinery/pkg/runtime/schema"
	smdschema "sigs.k8s.io/structured-merge-diff/v6/schema"

	"metacel.dev/metacel/runtime/expr"
	"metacel.dev/metacel/runtime/kinds"
)

// childEntryFields are the fields of a child entry, which a template indented one level too deep
// holds instead.
var childEntryFields = map[string]bool{
	"id": true, "includeWhen": true, "forEach": true, "template": true, "expression": true,
	"readyWhen": true, "deletionPolicy": true, "crossNamespace": true,
}

// schemaOfChild returns the resource of a template's literal kind and its schema; ok is false when
// the kind is a ${} template, unknown, or has no known schema.
func schemaOfChild(m kinds.Mapper, tmpl map[string]any, allowed map[schema.GroupVersionResource]ChildResourceInfo) (*kinds.ObjectSchema, bool) {
	info, ok := templateKind(m, tmpl)
	if !ok {
		return nil, false
	}
	res, ok := allowed[info.GVR]
	return res.ObjectSchema, ok && res.ObjectSchema != nil
}

// childSchema checks a template child against the schema of its kind
// (kinds.ObjectSchema.CheckTemplate), its ${} strings as templateCheck says.
func (c *checker) childSchema(tmpl map[string]any, path string, env *expr.Env, s *kinds.ObjectSchema) {
	s.CheckTemplate(tmpl, path, newTemplateCheck(c.loadErrors, env, s), c.reportSchemaProblem)
}

// templateCheck is what the walk of a template against the schema of its kind asks of policy,
// which knows the template language (kinds.Template): a string with ${} in it holds an
// expression; a whole-value "${...}" is checked by its expression's type where both that type and
// the field's are known (dyn passes, unless it may be a string where none goes), another string
// with ${} in it is a string; a field of the child entry written in its template says so.
type templateCheck struct {
	errs *loadErrors
	// env compiles a template's whole-value expressions; nil checks none
	env   *expr.Env
	types *smdschema.Schema
}

func newTemplateCheck(errs *loadErrors, env *expr.Env, s *kinds.ObjectSchema) *templateCheck {
	types, _ := s.Types()
	return &templateCheck{errs: errs, env: env, types: types}
}

func (t *templateCheck) errorf(path, format string, args ...any) {
	t.errs.errorf(path, format, args...)
}

// HoldsExpression reports whether a template string holds ${}.
func (t *templateCheck) HoldsExpression(s string) bool { return strings.Contains(s, "${") }

// CheckExpression checks a string with ${} in it: a whole value by its expression's type, another
// as the string it builds.
func (t *templateCheck) CheckExpression(s string, f kinds.Field) {
	src, form := templateForm(s)
	switch form {
	case wholeValue:
		t.expression(src, s, f)
	case unclear:
	default:
		if !f.TakesString() {
			t.errorf(f.Path, "builds a string, but %s takes %s: write the whole value as one expression \"${...}\"", f.Name(), f.Takes())
		}
	}
}

// AboutTopField says that a field of the child entry belongs beside the template, not in it.
func (t *templateCheck) AboutTopField(name string) string {
	if childEntryFields[name] {
		return fmt.Sprintf("%s belongs to the child entry, not to its template: indent it to the level of template", name)
	}
	return ""
}

// expression checks a whole-value expression's type against the field's; a type that cannot be
// known at load (dyn) passes, unless the expression may give a string (it reads a quantity or an
// int-or-string, or its default is a string) and the field takes none. The template compiled it
// already and reported its errors.
func (t *templateCheck) expression(src, text string, f kinds.Field) {
	if t.env == nil {
		return
	}
	p, err := t.env.Compile(src, expr.WantAny)
	if err != nil {
		return
	}
	if out := expr.UnwrapOptional(p.Out); !t.accepts(f, out) {
		t.errorf(f.Path, "%q returns %s, but %s takes %s%s", text, cel.FormatCELType(out), f.Name(), f.Takes(), conversionHint(f.Atom, out, src))
		return
	}
	if from := p.MayGiveString(); from != nil && !f.TakesString() && !f.TakesAnyValue() {
		t.errorf(f.Path, "%q may return a string (%s), but %s takes %s%s", text, from, f.Name(), f.Takes(), stringHint(f.Atom, from, src))
	}
}

// stringHint suggests how to make an expression that may give a string give a number.
func stringHint(atom smdschema.Atom, from *expr.StringSource, src string) string {
	if atom.Scalar == nil || *atom.Scalar != smdschema.Numeric {
		return ""
	}
	switch from.What {
	case expr.Quantity:
		return fmt.Sprintf(": convert it, e.g. \"${quantity(string(%s)).asInteger()}\"", src)
	case expr.IntOrString:
		return fmt.Sprintf(": convert it, e.g. \"${int(%s)}\"", src)
	}
	return fmt.Sprintf(": give a number instead of %s", from.Expr)
}

// accepts reports whether a value of CEL type typ can fill the field (of its type: a list's
// item or a map's value is a field without a path).
func (t *templateCheck) accepts(f kinds.Field, typ *cel.Type) bool {
	atom := f.Atom
	if f.TakesAnyValue() {
		return true
	}
	switch typ.Kind() {
	case types.BoolKind:
		return atom.Scalar != nil && *atom.Scalar == smdschema.Boolean
	case types.IntKind, types.UintKind, types.DoubleKind:
		return atom.Scalar != nil && (*atom.Scalar == smdschema.Numeric || *atom.Scalar == smdschema.Untyped)
	case types.StringKind, types.BytesKind, types.TimestampKind, types.DurationKind:
		return f.TakesString()
	case types.ListKind:
		return atom.List != nil && t.acceptsElements(atom.List.ElementType, typ)
	case types.MapKind:
		return atom.Map != nil && t.acceptsValues(atom.Map, typ)
	case types.StructKind:
		if isStringType(typ) {
			return f.TakesString()
		}
		return atom.Map != nil
	}
	return true // dyn, any, null, type parameters, opaque types
}

// acceptsElements checks a list's element type against the schema's items.
func (t *templateCheck) acceptsElements(elem smdschema.TypeRef, typ *cel.Type) bool {
	params := typ.Parameters()
	item, ok := t.types.Resolve(elem)
	return len(params) != 1 || !ok || t.accepts(kinds.Field{Type: elem, Atom: item}, params[0])
}

// acceptsValues checks a map's value type against a schema map whose every key has one type
// (labels): an object's fields each have their own, which a map type cannot tell apart.
func (t *templateCheck) acceptsValues(m *smdschema.Map, typ *cel.Type) bool {
	params := typ.Parameters()
	if len(m.Fields) > 0 || m.ElementType == (smdschema.TypeRef{}) || len(params) != 2 {
		return true
	}
	val, ok := t.types.Resolve(m.ElementType)
	return !ok || t.accepts(kinds.Field{Type: m.ElementType, Atom: val}, params[1])
}

// isStringType reports whether a CEL object type is one of Kubernetes' library types (quantity,
// URL, IP, CIDR, semver), which metacel writes out as strings.
func isStringType(t *cel.Type) bool {
	return strings.HasPrefix(t.TypeName(), "kubernetes.") || strings.HasPrefix(t.TypeName(), "net.")
}

// conversionHint suggests the CEL conversion from a type to the field's.
func conversionHint(atom smdschema.Atom, t *cel.Type, src string) string {
	switch {
	case atom.Scalar == nil:
		return ""
	case *atom.Scalar == smdschema.String && t.Kind() != types.ListKind && t.Kind() != types.MapKind:
		return fmt.Sprintf(": convert it, e.g. \"${string(%s)}\"", src)
	case *atom.Scalar == smdschema.Numeric && t.Kind() == types.StringKind:
		return fmt.Sprintf(": convert it, e.g. \"${int(%s)}\"", src)
	}
	return ""
}

// What a template string gives.
const (
	aString    = iota // a literal, or a string with ${} in it
	wholeValue        // exactly one "${...}": the expression's value, of its type
	unclear           // "${...}" with another "${" inside: left to run time
)

// templateForm says what a template string gives, with the expression of a whole value. A string
// that starts with "${", ends with "}" and holds another "${" is either an interpolation or one
// expression with "${" in its own string literals; it is not checked at load.
func templateForm(s string) (src string, form int) {
	if !strings.HasPrefix(s, "${") || !strings.HasSuffix(s, "}") {
		return "", aString
	}
	if strings.Count(s, "${") > 1 {
		return "", unclear
	}
	return s[2 : len(s)-1], wholeValue
}
