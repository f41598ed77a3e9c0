package policy

import (
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"unicode"

	"github.com/google/cel-go/cel"
	"github.com/google/cel-go/common/types"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/runtime/schema"
	smdschema "sigs.k8s.io/structured-merge-diff/v6/schema"

	"metacel.dev/metacel/runtime/expr"
	"metacel.dev/metacel/runtime/fieldpath"
	"metacel.dev/metacel/runtime/kinds"
)

// childEntryFields are the fields of a child entry, which a template indented one level too deep
// holds instead.
var childEntryFields = map[string]bool{
	"id": true, "includeWhen": true, "forEach": true, "template": true, "expression": true,
	"readyWhen": true, "deletionPolicy": true, "crossNamespace": true,
}

// schemaCheck checks one child template, or one rendered child, against the schema of its kind,
// as the API server would check the object: a field the kind does not have, or a value of the
// wrong type, is a problem at its path. In a template, a whole-value "${...}" is checked by its
// expression's type where both that type and the field's are known (dyn passes, unless it may be a
// string where none goes), and a string with ${} in it is a string. Maps are walked in key order, so that problems come in a stable order.
type schemaCheck struct {
	report func(path, msg string)
	// template is true for a template, whose strings may hold ${}; false for a rendered object
	template bool
	// env compiles a template's whole-value expressions
	env   *expr.Env
	types *smdschema.Schema
	// schema knows the required fields of the kind's objects
	schema *kinds.ObjectSchema
	kind   string
	// root is the object's path (a template's in the policy; "" for a rendered object): paths
	// below it are the object's fields
	root string
}

func (w *schemaCheck) errorf(path, format string, args ...any) {
	w.report(path, fmt.Sprintf(format, args...))
}

// schemaOfChild returns the resource of a template's literal kind and its schema; ok is false when
// the kind is a ${} template, unknown, or has no known schema.
func (c *compiler) schemaOfChild(tmpl map[string]any, allowed map[schema.GroupVersionResource]ChildResourceInfo) (*kinds.ObjectSchema, bool) {
	info, ok := c.templateKind(tmpl)
	if !ok {
		return nil, false
	}
	res, ok := allowed[info.GVR]
	return res.ObjectSchema, ok && res.ObjectSchema != nil
}

// checkChildSchema checks a template child against the schema of its kind.
func (c *compiler) checkChildSchema(tmpl map[string]any, path string, env *expr.Env, s *kinds.ObjectSchema) {
	smd, root := s.Types()
	w := &schemaCheck{report: func(p, msg string) { c.errorf(p, "%s", msg) }, template: true, env: env, types: smd, schema: s, kind: s.Kind, root: path}
	w.value(tmpl, root, path)
}

// SchemaMismatches explains why a rendered object does not fit the schema of its kind: each
// problem as "field.path: what is wrong", at most max of them, in a stable order (fields by name).
// It finds what the API server's server-side apply rejects (kinds.ObjectSchema.Validate), and says
// it the way a policy's load errors do: the closest known field of an unknown one, the type a field
// takes. None, when it finds nothing.
func SchemaMismatches(s *kinds.ObjectSchema, obj map[string]any, max int) []string {
	var out []string
	smd, root := s.Types()
	w := &schemaCheck{types: smd, schema: s, kind: s.Kind, report: func(p, msg string) {
		if len(out) < max {
			out = append(out, p+": "+msg)
		}
	}}
	w.value(obj, root, "")
	return out
}

// field names a field of the object in messages: "Pod spec.containers[0]", or "Pod" for the object.
func (w *schemaCheck) field(path string) string {
	if rest := strings.TrimPrefix(strings.TrimPrefix(path, w.root), "."); rest != "" {
		return w.kind + " " + rest
	}
	return w.kind
}

func (w *schemaCheck) value(v any, tr smdschema.TypeRef, path string) {
	atom, ok := w.types.Resolve(tr)
	if !ok || anyValue(atom) {
		return
	}
	switch x := v.(type) {
	case nil:
	case map[string]any:
		if atom.Map == nil {
			w.errorf(path, "is an object, but %s takes %s", w.field(path), describeAtom(atom, tr))
			return
		}
		w.object(x, atom.Map, path)
		w.required(x, tr, path)
		w.exclusive(x, tr, path)
	case []any:
		if atom.List == nil {
			w.errorf(path, "is a list, but %s takes %s", w.field(path), describeAtom(atom, tr))
			return
		}
		w.list(x, atom.List, path)
	case string:
		w.str(x, atom, tr, path)
	default:
		w.scalar(x, atom, tr, path)
	}
}

// anyValue reports whether an atom takes any value (x-kubernetes-preserve-unknown-fields, a
// RawExtension): a scalar of any type, a list or a map.
func anyValue(a smdschema.Atom) bool {
	return a.Scalar != nil && *a.Scalar == smdschema.Untyped && a.List != nil && a.Map != nil
}

func (w *schemaCheck) object(m map[string]any, t *smdschema.Map, path string) {
	for _, k := range sortedKeys(m) {
		fpath := fieldpath.Field(path, k)
		if f, ok := t.FindField(k); ok {
			w.value(m[k], f.Type, fpath)
			continue
		}
		if t.ElementType != (smdschema.TypeRef{}) {
			w.value(m[k], t.ElementType, fpath)
			continue
		}
		w.unknownField(k, t, path, fpath)
	}
}

// required reports each field the object's type requires that it does not have: the API server
// rejects the object without it. A template's "${...}" counts as present. Nothing under the
// object's status is checked: a write of the object does not write its status.
func (w *schemaCheck) required(m map[string]any, tr smdschema.TypeRef, path string) {
	if w.schema == nil {
		return
	}
	if rel := strings.TrimPrefix(strings.TrimPrefix(path, w.root), "."); rel == "status" || strings.HasPrefix(rel, "status.") || strings.HasPrefix(rel, "status[") {
		return
	}
	for _, name := range w.schema.Required(tr) {
		if v, ok := m[name]; ok && v != nil {
			continue
		}
		why := ""
		if w.template {
			why = fmt.Sprintf(": the API server rejects %s without it", withArticle(w.kind))
		}
		w.errorf(path, "required field %q of %s is missing%s", name, w.field(path), why)
	}
}

// exclusiveFields are fields of built-in types that the API server refuses together, though no
// schema says so (only its validation code does), by the name of their type in client-go's schema.
var exclusiveFields = map[string][][]string{
	// k8s.io/kubernetes pkg/apis/policy/validation ValidatePodDisruptionBudgetSpec
	"io.k8s.api.policy.v1.PodDisruptionBudgetSpec": {{"minAvailable", "maxUnavailable"}},
	// pkg/apis/core/validation validateEnvVarValueFrom: valueFrom "may not be specified when value is not empty"
	"io.k8s.api.core.v1.EnvVar": {{"value", "valueFrom"}},
	// pkg/apis/core/validation validateHandler: "may not specify more than 1 handler type"
	"io.k8s.api.core.v1.Probe":            {{"exec", "httpGet", "tcpSocket", "grpc"}},
	"io.k8s.api.core.v1.LifecycleHandler": {{"exec", "httpGet", "tcpSocket", "sleep"}},
}

// exclusive reports fields of the object that its type does not take together (exclusiveFields).
// A template's "${...}" may yet give null, which leaves the field out: only values known here
// count.
func (w *schemaCheck) exclusive(m map[string]any, tr smdschema.TypeRef, path string) {
	if tr.NamedType == nil {
		return
	}
	for _, group := range exclusiveFields[*tr.NamedType] {
		var set []string
		for _, name := range group {
			v, ok := m[name]
			if s, isString := v.(string); !ok || v == nil || (isString && w.template && strings.Contains(s, "${")) {
				continue
			}
			set = append(set, name)
		}
		if len(set) > 1 {
			w.errorf(path, "%s takes only one of %s, but has %s: the API server rejects %s with more than one; keep one",
				w.field(path), strings.Join(group, ", "), strings.Join(set, " and "), withArticle(w.kind))
		}
	}
}

func (w *schemaCheck) unknownField(k string, t *smdschema.Map, path, fpath string) {
	if w.template && path == w.root && childEntryFields[k] {
		w.errorf(fpath, "unknown field %q of %s: %s belongs to the child entry, not to its template: indent it to the level of template", k, w.kind, k)
		return
	}
	names := make([]string, len(t.Fields))
	for i, f := range t.Fields {
		names[i] = f.Name
	}
	w.errorf(fpath, "unknown field %q of %s%s", k, w.field(path), fieldpath.DidYouMean(k, names))
}

func (w *schemaCheck) list(l []any, t *smdschema.List, path string) {
	for i, item := range l {
		w.value(item, t.ElementType, fieldpath.Index(path, i))
	}
	if t.ElementRelationship == smdschema.Associative && len(t.Keys) > 0 {
		w.listKeys(l, t, path)
	}
}

// listKeys checks that every literal item of a keyed list (containers by name) has its keys, and
// that no two have the same literal keys: server-side apply merges the items by key.
func (w *schemaCheck) listKeys(l []any, t *smdschema.List, path string) {
	item, _ := w.types.Resolve(t.ElementType)
	if item.Map == nil {
		return
	}
	seen := map[string]int{}
	for i, v := range l {
		m, ok := v.(map[string]any)
		if !ok {
			continue // an expression: known at run time
		}
		if w.lacksRequiredKey(m, t) {
			continue // required reports it
		}
		key, literal := w.itemKey(m, item.Map, t.Keys)
		if key == "" {
			w.errorf(fieldpath.Index(path, i), "has none of the keys %s of %s: its items are merged by them, so each needs them",
				strings.Join(quoteAll(t.Keys), ", "), w.field(path))
			continue
		}
		if first, dup := seen[key]; dup && literal {
			w.errorf(fieldpath.Index(path, i), "has the same %s as item %d: %s merges its items by %s, so each needs its own",
				strings.Join(t.Keys, " and "), first, w.field(path), strings.Join(t.Keys, " and "))
			continue
		}
		seen[key] = i
	}
}

// lacksRequiredKey reports whether a keyed list's item lacks a key its type requires.
func (w *schemaCheck) lacksRequiredKey(m map[string]any, t *smdschema.List) bool {
	if w.schema == nil {
		return false
	}
	for _, k := range w.schema.Required(t.ElementType) {
		if v, ok := m[k]; (!ok || v == nil) && slices.Contains(t.Keys, k) {
			return true
		}
	}
	return false
}

// itemKey returns the key of a list item ("" when it has none of the key fields and they have no
// default) and whether every key field is a literal.
func (w *schemaCheck) itemKey(m map[string]any, item *smdschema.Map, keys []string) (key string, literal bool) {
	literal, found := true, false
	var b strings.Builder
	for _, k := range keys {
		v, ok := m[k]
		if !ok {
			if f, has := item.FindField(k); has && f.Default != nil {
				v, ok = f.Default, true
			}
		}
		found = found || ok
		if s, isString := v.(string); isString && w.template && strings.Contains(s, "${") {
			literal = false
		}
		fmt.Fprintf(&b, "%s=%v;", k, v)
	}
	if !found {
		return "", literal
	}
	return b.String(), literal
}

func quoteAll(s []string) []string {
	out := make([]string, len(s))
	for i, x := range s {
		out[i] = strconv.Quote(x)
	}
	return out
}

// str checks a string: a whole-value expression by its type, a string with ${} in it as a string,
// a literal as itself.
func (w *schemaCheck) str(s string, atom smdschema.Atom, tr smdschema.TypeRef, path string) {
	form, src := aString, ""
	if w.template {
		src, form = templateForm(s)
	}
	switch form {
	case wholeValue:
		w.expression(src, s, atom, tr, path)
		return
	case unclear:
		return
	}
	template := w.template && strings.Contains(s, "${")
	if takesString(atom) {
		if !template && isQuantity(tr) {
			if _, err := resource.ParseQuantity(s); err != nil {
				w.errorf(path, "%q is not a quantity, which %s takes %s", s, w.field(path), quantityHint(s))
			}
		}
		return
	}
	if template {
		w.errorf(path, "builds a string, but %s takes %s: write the whole value as one expression \"${...}\"", w.field(path), describeAtom(atom, tr))
		return
	}
	hint := ""
	if w.template {
		hint = unquoteHint(s, atom)
	}
	w.errorf(path, "%q is a string, but %s takes %s%s", s, w.field(path), describeAtom(atom, tr), hint)
}

// quantitySuffixes are the suffixes of a quantity the API server parses
// (k8s.io/apimachinery/pkg/api/resource): decimal SI, binary SI, and none.
var quantitySuffixes = []string{"", "n", "u", "m", "k", "M", "G", "T", "P", "E", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei"}

// quantityNumber is the number a quantity starts with, and the rest.
var quantityNumber = regexp.MustCompile(`^\s*([+-]?[0-9]+(?:\.[0-9]+)?)\s*(.*?)\s*$`)

// quantityHint proposes the quantity s likely meant, its number with the nearest suffix the API
// server parses ("1Gib": "1Gi", "500mb": "500M"), or gives examples.
func quantityHint(s string) string {
	if m := quantityNumber.FindStringSubmatch(s); m != nil {
		candidates := make([]string, 0, len(quantitySuffixes))
		for _, suffix := range quantitySuffixes {
			if _, err := resource.ParseQuantity(m[1] + suffix); err == nil {
				candidates = append(candidates, m[1]+suffix)
			}
		}
		if hint := fieldpath.DidYouMean(s, candidates); hint != "" {
			return strings.TrimPrefix(hint, " ")
		}
	}
	return `(e.g. "500m", "64Mi", 2)`
}

// unquoteHint suggests writing a quoted number or boolean unquoted.
func unquoteHint(s string, atom smdschema.Atom) string {
	if atom.Scalar == nil {
		return ""
	}
	_, errNum := strconv.ParseFloat(s, 64)
	_, errBool := strconv.ParseBool(s)
	if *atom.Scalar == smdschema.Numeric && errNum == nil || *atom.Scalar == smdschema.Boolean && errBool == nil {
		return fmt.Sprintf(": write it unquoted (%s)", s)
	}
	return ""
}

func (w *schemaCheck) scalar(v any, atom smdschema.Atom, tr smdschema.TypeRef, path string) {
	ok := false
	what := "a number"
	switch v.(type) {
	case bool:
		what = "a boolean"
		ok = atom.Scalar != nil && *atom.Scalar == smdschema.Boolean
	default: // int64, float64
		ok = atom.Scalar != nil && (*atom.Scalar == smdschema.Numeric || *atom.Scalar == smdschema.Untyped)
	}
	if ok {
		return
	}
	hint := ""
	if w.template && takesString(atom) {
		hint = fmt.Sprintf(": quote it (\"%v\")", v)
	}
	w.errorf(path, "%v is %s, but %s takes %s%s", v, what, w.field(path), describeAtom(atom, tr), hint)
}

// expression checks a whole-value expression's type against the field's; a type that cannot be
// known at load (dyn) passes, unless the expression may give a string (it reads a quantity or an
// int-or-string, or its default is a string) and the field takes none. The template compiled it
// already and reported its errors.
func (w *schemaCheck) expression(src, text string, atom smdschema.Atom, tr smdschema.TypeRef, path string) {
	if w.env == nil {
		return
	}
	p, err := w.env.Compile(src, expr.WantAny)
	if err != nil {
		return
	}
	if t := expr.UnwrapOptional(p.Out); !w.accepts(atom, t) {
		w.errorf(path, "%q returns %s, but %s takes %s%s", text, cel.FormatCELType(t), w.field(path), describeAtom(atom, tr), conversionHint(atom, t, src))
		return
	}
	if from := p.MayGiveString(); from != nil && !takesString(atom) && !anyValue(atom) {
		w.errorf(path, "%q may return a string (%s), but %s takes %s%s", text, from, w.field(path), describeAtom(atom, tr), stringHint(atom, from, src))
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

// accepts reports whether a value of CEL type t can fill a field of the atom's type.
func (w *schemaCheck) accepts(atom smdschema.Atom, t *cel.Type) bool {
	if anyValue(atom) {
		return true
	}
	switch t.Kind() {
	case types.BoolKind:
		return atom.Scalar != nil && *atom.Scalar == smdschema.Boolean
	case types.IntKind, types.UintKind, types.DoubleKind:
		return atom.Scalar != nil && (*atom.Scalar == smdschema.Numeric || *atom.Scalar == smdschema.Untyped)
	case types.StringKind, types.BytesKind, types.TimestampKind, types.DurationKind:
		return takesString(atom)
	case types.ListKind:
		return atom.List != nil && w.acceptsElements(atom.List.ElementType, t)
	case types.MapKind:
		return atom.Map != nil && w.acceptsValues(atom.Map, t)
	case types.StructKind:
		if isStringType(t) {
			return takesString(atom)
		}
		return atom.Map != nil
	}
	return true // dyn, any, null, type parameters, opaque types
}

// acceptsElements checks a list's element type against the schema's items.
func (w *schemaCheck) acceptsElements(elem smdschema.TypeRef, t *cel.Type) bool {
	params := t.Parameters()
	item, ok := w.types.Resolve(elem)
	return len(params) != 1 || !ok || w.accepts(item, params[0])
}

// acceptsValues checks a map's value type against a schema map whose every key has one type
// (labels): an object's fields each have their own, which a map type cannot tell apart.
func (w *schemaCheck) acceptsValues(m *smdschema.Map, t *cel.Type) bool {
	params := t.Parameters()
	if len(m.Fields) > 0 || m.ElementType == (smdschema.TypeRef{}) || len(params) != 2 {
		return true
	}
	val, ok := w.types.Resolve(m.ElementType)
	return !ok || w.accepts(val, params[1])
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

// takesString reports whether a field takes a string: a string, or an int-or-string, quantity or
// other scalar of open type.
func takesString(a smdschema.Atom) bool {
	return a.Scalar != nil && (*a.Scalar == smdschema.String || *a.Scalar == smdschema.Untyped)
}

func isQuantity(tr smdschema.TypeRef) bool {
	return tr.NamedType != nil && *tr.NamedType == kinds.QuantityType
}

// describeAtom says what a field takes, as a person reads it.
func describeAtom(a smdschema.Atom, tr smdschema.TypeRef) string {
	var what []string
	if a.Scalar != nil {
		what = append(what, describeScalar(*a.Scalar, tr))
	}
	if a.List != nil {
		what = append(what, "a list")
	}
	if a.Map != nil {
		what = append(what, "an object")
	}
	return strings.Join(what, " or ")
}

func describeScalar(s smdschema.Scalar, tr smdschema.TypeRef) string {
	switch {
	case s == smdschema.String:
		return "a string"
	case s == smdschema.Numeric:
		return "a number"
	case s == smdschema.Boolean:
		return "a boolean"
	case isQuantity(tr):
		return "a quantity (a string such as \"500m\" or a number)"
	case tr.NamedType != nil && *tr.NamedType == kinds.IntOrStringType:
		return "an integer or a string"
	}
	return "a string or a number"
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

// withArticle puts "a" or "an" before a kind, by the sound it starts with: "an Ingress",
// "a Pod", "a UserGroup"; a kind that starts with an acronym is read by its letters
// ("an HTTPRoute", "a URLMap").
func withArticle(kind string) string {
	r := []rune(kind)
	switch {
	case len(r) == 0:
		return kind
	case len(r) > 1 && unicode.IsUpper(r[0]) && unicode.IsUpper(r[1]): // an acronym: its first letter's name
		if strings.ContainsRune("AEFHILMNORSX", r[0]) {
			return "an " + kind
		}
	case strings.ContainsRune("AEIOaeio", r[0]):
		return "an " + kind
	case (r[0] == 'U' || r[0] == 'u') && !youSound(kind[1:]):
		return "an " + kind
	}
	return "a " + kind
}

// youSound reports whether what follows a leading U makes it sound "you" (User, Unit, Utility).
func youSound(rest string) bool {
	for _, p := range []string{"ni", "se", "sa", "su", "ti", "ri", "ra"} {
		if strings.HasPrefix(rest, p) {
			return true
		}
	}
	return false
}
