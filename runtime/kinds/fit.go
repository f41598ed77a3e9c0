package kinds

import (
	"errors"
	"fmt"
	"maps"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"unicode"

	"k8s.io/apimachinery/pkg/api/resource"
	smdschema "sigs.k8s.io/structured-merge-diff/v6/schema"

	"metacel.dev/metacel/runtime/fieldpath"
)

// Fit gives the schema's verdict on an object as the API server's server-side apply would give it
// to a create: nil when the object fits, else why not. structured-merge-diff's check (validate) finds
// what server-side apply rejects, but follows Go's map order, so that which of two unknown fields it
// names changes from one check to the next; the walk of the object finds the same and more (a
// missing required field: client-go's schema has none) and says it as a policy's load errors do:
// each problem as "field.path: what is wrong", in field order, the closest known field of an unknown
// one, the type a field takes. The error names at most max problems, joined by "; ".
func (s *ObjectSchema) Fit(obj map[string]any, max int) error {
	err := s.validate(obj)
	var problems []string
	w := s.walker("", nil, func(path, msg string) {
		if len(problems) < max {
			problems = append(problems, path+": "+msg)
		}
	})
	w.value(obj, w.s.parser.TypeRef, "")
	if len(problems) > 0 {
		return errors.New(strings.Join(problems, "; "))
	}
	return err
}

// A Template is what the walk of an object template asks of the caller that knows the template's
// language: kinds knows objects and their schemas, not the expressions a template's strings may
// hold, nor where the template sits in its document.
type Template interface {
	// HoldsExpression reports whether a string holds an expression: its value is known only when
	// the template renders, so the walk neither checks it as a literal nor counts it as a
	// known value (a key of a keyed list's item, one of fields taken only one at a time).
	HoldsExpression(s string) bool
	// CheckExpression checks a string that holds an expression against the field it fills, and
	// reports what does not fit itself.
	CheckExpression(s string, f Field)
	// AboutTopField says why a field the kind does not have is at the top of the template (it
	// belongs beside the template in its document, say), or "" when it has nothing to say.
	AboutTopField(name string) string
}

// CheckTemplate walks an object template, written at path root of its document, against the
// schema, and reports each problem at its path, in field order. Beside what Fit finds, it says how
// to fix a literal as written (quote it, write it unquoted) and why a required field is needed, and
// it leaves the strings that hold expressions to t.
func (s *ObjectSchema) CheckTemplate(tmpl map[string]any, root string, t Template, report func(path, msg string)) {
	w := s.walker(root, t, report)
	w.value(tmpl, w.s.parser.TypeRef, root)
}

// CheckStatusTemplate walks the template of an object's status (status: its fields by name), which
// stands at path root of its document in place of the object (its fields at root.status), against
// the schema of the object's status, as CheckTemplate does an object's. Fields the status schema
// does not declare are not looked at, nor are required fields, as nothing under an object's status
// is (Fit).
func (s *ObjectSchema) CheckStatusTemplate(status map[string]any, root string, t Template, report func(path, msg string)) {
	w := s.walker(root, t, report)
	w.required = false
	statusType, ok := w.statusType()
	if !ok {
		return
	}
	for _, k := range slices.Sorted(maps.Keys(status)) {
		if f, ok := statusType.FindField(k); ok {
			w.value(status[k], f.Type, fieldpath.Field(fieldpath.Field(root, "status"), k))
		}
	}
}

// A Field is a field of an object as the walk meets it: where it is, and the type it takes.
type Field struct {
	// Path is the field's path.
	Path string
	// Type is the field's type in the schema, Atom what it resolves to.
	Type smdschema.TypeRef
	Atom smdschema.Atom
	// kind and root are the object's kind and path, which Name reads
	kind, root string
}

// Name names the field in messages: "Pod spec.containers[0]", or "Pod" for the object itself.
func (f Field) Name() string {
	if rest := strings.TrimPrefix(strings.TrimPrefix(f.Path, f.root), "."); rest != "" {
		return f.kind + " " + rest
	}
	return f.kind
}

// Takes says what the field takes, as a person reads it: "a number", "a list or an object".
func (f Field) Takes() string {
	var what []string
	if f.Atom.Scalar != nil {
		what = append(what, describeScalar(*f.Atom.Scalar, f.Type))
	}
	if f.Atom.List != nil {
		what = append(what, "a list")
	}
	if f.Atom.Map != nil {
		what = append(what, "an object")
	}
	return strings.Join(what, " or ")
}

// TakesString reports whether the field takes a string: a string, or an int-or-string, quantity
// or other scalar of open type.
func (f Field) TakesString() bool {
	return f.Atom.Scalar != nil && (*f.Atom.Scalar == smdschema.String || *f.Atom.Scalar == smdschema.Untyped)
}

// TakesAnyValue reports whether the field takes any value (x-kubernetes-preserve-unknown-fields, a
// RawExtension): a scalar of any type, a list or a map.
func (f Field) TakesAnyValue() bool {
	a := f.Atom
	return a.Scalar != nil && *a.Scalar == smdschema.Untyped && a.List != nil && a.Map != nil
}

// objectWalk checks an object, or an object template, against the schema, as the API server would
// check the object: a field the kind does not have, a value of the wrong type, a missing required
// field, fields taken one at a time set together, an item of a keyed list without its keys or with
// another item's, each is a problem at its path. Maps are walked in key order, so that problems come
// in a stable order.
type objectWalk struct {
	s      *ObjectSchema
	types  *smdschema.Schema
	report func(path, msg string)
	// template is nil for an object, whose strings are literals
	template Template
	// root is the object's path (a template's in its document; "" for an object): paths below it
	// are the object's fields
	root string
	// required is false where required fields are not checked
	required bool
}

func (s *ObjectSchema) walker(root string, t Template, report func(path, msg string)) *objectWalk {
	return &objectWalk{s: s, types: s.parser.Schema, report: report, template: t, root: root, required: true}
}

func (w *objectWalk) errorf(path, format string, args ...any) {
	w.report(path, fmt.Sprintf(format, args...))
}

// statusType returns the type of the objects' status, when they have one.
func (w *objectWalk) statusType() (smdschema.Atom, bool) {
	obj, ok := w.types.Resolve(w.s.parser.TypeRef)
	if !ok || obj.Map == nil {
		return smdschema.Atom{}, false
	}
	f, ok := obj.FindField("status")
	if !ok {
		return smdschema.Atom{}, false
	}
	status, ok := w.types.Resolve(f.Type)
	return status, ok && status.Map != nil
}

// field names a field of the object in messages (Field.Name).
func (w *objectWalk) field(path string) string {
	return Field{Path: path, kind: w.s.Kind, root: w.root}.Name()
}

// holdsExpression reports whether a template's string holds an expression.
func (w *objectWalk) holdsExpression(s string) bool {
	return w.template != nil && w.template.HoldsExpression(s)
}

func (w *objectWalk) value(v any, tr smdschema.TypeRef, path string) {
	atom, ok := w.types.Resolve(tr)
	if !ok {
		return
	}
	f := Field{Path: path, Type: tr, Atom: atom, kind: w.s.Kind, root: w.root}
	if f.TakesAnyValue() {
		return
	}
	switch x := v.(type) {
	case nil:
	case map[string]any:
		if atom.Map == nil {
			w.errorf(path, "is an object, but %s takes %s", f.Name(), f.Takes())
			return
		}
		w.object(x, atom.Map, path)
		w.requiredFields(x, tr, path)
		w.exclusive(x, tr, path)
	case []any:
		if atom.List == nil {
			w.errorf(path, "is a list, but %s takes %s", f.Name(), f.Takes())
			return
		}
		w.list(x, atom.List, path)
	case string:
		w.str(x, f)
	default:
		w.scalar(x, f)
	}
}

func (w *objectWalk) object(m map[string]any, t *smdschema.Map, path string) {
	for _, k := range slices.Sorted(maps.Keys(m)) {
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

// requiredFields reports each field the object's type requires that it does not have: the API
// server rejects the object without it. A template's expression counts as present. Nothing under
// the object's status is checked: a write of the object does not write its status.
func (w *objectWalk) requiredFields(m map[string]any, tr smdschema.TypeRef, path string) {
	if !w.required {
		return
	}
	if rel := strings.TrimPrefix(strings.TrimPrefix(path, w.root), "."); rel == "status" || strings.HasPrefix(rel, "status.") || strings.HasPrefix(rel, "status[") {
		return
	}
	for _, name := range w.s.Required(tr) {
		if v, ok := m[name]; ok && v != nil {
			continue
		}
		why := ""
		if w.template != nil {
			why = fmt.Sprintf(": the API server rejects %s without it", withArticle(w.s.Kind))
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
// A template's expression may yet give null, which leaves the field out: only values known here
// count.
func (w *objectWalk) exclusive(m map[string]any, tr smdschema.TypeRef, path string) {
	if tr.NamedType == nil {
		return
	}
	for _, group := range exclusiveFields[*tr.NamedType] {
		var set []string
		for _, name := range group {
			v, ok := m[name]
			if s, isString := v.(string); !ok || v == nil || (isString && w.holdsExpression(s)) {
				continue
			}
			set = append(set, name)
		}
		if len(set) > 1 {
			w.errorf(path, "%s takes only one of %s, but has %s: the API server rejects %s with more than one; keep one",
				w.field(path), strings.Join(group, ", "), strings.Join(set, " and "), withArticle(w.s.Kind))
		}
	}
}

func (w *objectWalk) unknownField(k string, t *smdschema.Map, path, fpath string) {
	if w.template != nil && path == w.root {
		if why := w.template.AboutTopField(k); why != "" {
			w.errorf(fpath, "unknown field %q of %s: %s", k, w.s.Kind, why)
			return
		}
	}
	names := make([]string, len(t.Fields))
	for i, f := range t.Fields {
		names[i] = f.Name
	}
	w.errorf(fpath, "unknown field %q of %s%s", k, w.field(path), fieldpath.DidYouMean(k, names))
}

func (w *objectWalk) list(l []any, t *smdschema.List, path string) {
	for i, item := range l {
		w.value(item, t.ElementType, fieldpath.Index(path, i))
	}
	if t.ElementRelationship == smdschema.Associative && len(t.Keys) > 0 {
		w.listKeys(l, t, path)
	}
}

// listKeys checks that every literal item of a keyed list (containers by name) has its keys, and
// that no two have the same literal keys: server-side apply merges the items by key.
func (w *objectWalk) listKeys(l []any, t *smdschema.List, path string) {
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
			continue // requiredFields reports it
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
func (w *objectWalk) lacksRequiredKey(m map[string]any, t *smdschema.List) bool {
	if !w.required {
		return false
	}
	for _, k := range w.s.Required(t.ElementType) {
		if v, ok := m[k]; (!ok || v == nil) && slices.Contains(t.Keys, k) {
			return true
		}
	}
	return false
}

// itemKey returns the key of a list item ("" when it has none of the key fields and they have no
// default) and whether every key field is known (none holds an expression).
func (w *objectWalk) itemKey(m map[string]any, item *smdschema.Map, keys []string) (key string, literal bool) {
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
		if s, isString := v.(string); isString && w.holdsExpression(s) {
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

// str checks a string: a template's string that holds an expression by the template's rules, a
// literal as itself.
func (w *objectWalk) str(s string, f Field) {
	if w.holdsExpression(s) {
		w.template.CheckExpression(s, f)
		return
	}
	if f.TakesString() {
		if isQuantity(f.Type) {
			if _, err := resource.ParseQuantity(s); err != nil {
				w.errorf(f.Path, "%q is not a quantity, which %s takes %s", s, f.Name(), quantityHint(s))
			}
		}
		return
	}
	hint := ""
	if w.template != nil {
		hint = unquoteHint(s, f.Atom)
	}
	w.errorf(f.Path, "%q is a string, but %s takes %s%s", s, f.Name(), f.Takes(), hint)
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

func (w *objectWalk) scalar(v any, f Field) {
	ok := false
	what := "a number"
	atom := f.Atom
	switch v.(type) {
	case bool:
		what = "a boolean"
		ok = atom.Scalar != nil && *atom.Scalar == smdschema.Boolean
	default: // int64, float64
		ok = atom.Scalar != nil && (*atom.Scalar == smdschema.Numeric || *atom.Scalar == smdschema.Untyped)
		if ok && isFraction(v) && *atom.Scalar == smdschema.Numeric && w.s.builtin() {
			w.errorf(f.Path, "%v is not a whole number, but %s takes an integer (a built-in kind has no fractions)", v, f.Name())
			return
		}
	}
	if ok {
		return
	}
	hint := ""
	if w.template != nil && f.TakesString() {
		hint = fmt.Sprintf(": quote it (\"%v\")", v)
	}
	w.errorf(f.Path, "%v is %s, but %s takes %s%s", v, what, f.Name(), f.Takes(), hint)
}

// isFraction reports whether v is a number with a fractional part.
func isFraction(v any) bool {
	f, ok := v.(float64)
	return ok && f != math.Trunc(f)
}

func isQuantity(tr smdschema.TypeRef) bool {
	return tr.NamedType != nil && *tr.NamedType == QuantityType
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
	case tr.NamedType != nil && *tr.NamedType == IntOrStringType:
		return "an integer or a string"
	}
	return "a string or a number"
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
