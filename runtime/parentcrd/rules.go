package parentcrd

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiservervalidation "k8s.io/apiextensions-apiserver/pkg/apiserver/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	apiservercel "k8s.io/apiserver/pkg/cel"
	"k8s.io/apiserver/pkg/cel/environment"
	"k8s.io/kube-openapi/pkg/validation/spec"

	"metacel.dev/metacel/runtime/fieldpath"
)

// rulesKey is the key of a field's CEL validation rules, as a CRD's schema names them.
const rulesKey = "x-kubernetes-validations"

// ruleKeys are the keys of one rule.
var ruleKeys = []string{"message", "rule"}

// formats are the formats the API server checks, by the type they apply to: a string's are those
// apiextensions-apiserver validates (pkg/apiserver/validation/formats.go; TestEveryFormatIsOneTheAPIServerChecks
// holds them to it), an integer's and a number's the sizes OpenAPI names.
var formats = map[string][]string{
	"string": {"bsonobjectid", "byte", "cidr", "creditcard", "date", "date-time", "duration", "email", "hexcolor",
		"hostname", "ipv4", "ipv6", "isbn", "isbn10", "isbn13", "k8s-long-name", "k8s-short-name", "mac", "password",
		"rgbcolor", "ssn", "uri", "uuid", "uuid3", "uuid4", "uuid5"},
	"integer": {"int32", "int64"},
	"number":  {"float", "double"},
}

// Formats returns every format a declared field may have, sorted, for the policy format's JSON
// Schema.
func Formats() []string {
	var all []string
	for _, f := range formats {
		all = append(all, f...)
	}
	slices.Sort(all)
	return all
}

// format returns a field's format, which the API server must check for the field's type: one it
// does not know it ignores, checking nothing.
func (b *schemaBuilder) format(path, t string, m map[string]any) string {
	f := b.str(path, m, "format")
	if f == "" || formats[t] == nil || formatKnown(t, f) {
		return f // keysApply reports a format on a type that has none
	}
	b.errorf(path+".format", "unknown format %q for %s%s: the API server checks %s", f, article(t), fieldpath.DidYouMean(f, formats[t]), strings.Join(formats[t], ", "))
	return f
}

// formatKnown reports whether the API server checks format f on a field of type t, with its own
// list of formats.
func formatKnown(t, f string) bool {
	s := &spec.Schema{SchemaProps: spec.SchemaProps{Type: []string{t}, Format: f}}
	return len(apiservervalidation.GetUnrecognizedFormats(s, environment.DefaultCompatibilityVersion())) == 0
}

// rules returns a field's CEL validation rules (x-kubernetes-validations), recording where each
// is declared; at is the field's schema.
func (b *schemaBuilder) rules(path string, at *field.Path, m map[string]any) []apiextensionsv1.ValidationRule {
	v, ok := m[rulesKey]
	if !ok {
		return nil
	}
	path = fieldpath.Field(path, rulesKey)
	list, isList := v.([]any)
	if !isList {
		b.errorf(path, "expected a list of rules such as {rule: \"self.min <= self.max\", message: \"min must not exceed max\"}, got %s", describeValue(v))
		return nil
	}
	var out []apiextensionsv1.ValidationRule
	for i, x := range list {
		if r, ok := b.rule(fieldpath.Index(path, i), x); ok {
			b.record(ruleAt(at, len(out)), fieldpath.Index(path, i))
			out = append(out, r)
		}
	}
	return out
}

// rule returns one rule written as an object of rule and message.
func (b *schemaBuilder) rule(path string, v any) (apiextensionsv1.ValidationRule, bool) {
	m, isMap := v.(map[string]any)
	if !isMap {
		b.errorf(path, "expected a rule such as {rule: \"self.min <= self.max\", message: \"min must not exceed max\"}, got %s", describeValue(v))
		return apiextensionsv1.ValidationRule{}, false
	}
	for _, k := range slices.Sorted(maps.Keys(m)) {
		if !slices.Contains(ruleKeys, k) {
			b.errorf(fieldpath.Field(path, k), "unknown key %q%s: a rule has the keys %s", k, fieldpath.DidYouMean(k, ruleKeys), strings.Join(ruleKeys, ", "))
		}
	}
	r := apiextensionsv1.ValidationRule{Rule: b.str(path, m, "rule"), Message: b.str(path, m, "message")}
	if strings.TrimSpace(r.Rule) == "" {
		b.errorf(path+".rule", "a rule needs its CEL expression, true when the value is valid, e.g. rule: \"self.min <= self.max\"")
		return r, false
	}
	return r, true
}

// rootRules returns the rules declared on the whole parent, recording where each is declared.
func (b *schemaBuilder) rootRules(at *field.Path, declared []apiextensionsv1.ValidationRule) []apiextensionsv1.ValidationRule {
	if len(declared) == 0 {
		return nil
	}
	for i := range declared {
		b.record(ruleAt(at, i), fieldpath.Index(fieldpath.Field(b.base, rulesKey), i))
	}
	return slices.Clone(declared)
}

// ruleAt is the path of an object's i-th rule in the generated schema.
func ruleAt(at *field.Path, i int) *field.Path { return at.Child(rulesKey).Index(i) }

// addImmutable gives a field that declares immutable: true the rule it stands for, which keeps
// the field as it was created (recorded at the key). fieldAt is the field's schema.
func (b *schemaBuilder) addImmutable(path string, fieldAt *field.Path, m map[string]any, p *apiextensionsv1.JSONSchemaProps) {
	v, ok := m["immutable"]
	if !ok {
		return
	}
	on, isBool := v.(bool)
	if !isBool {
		b.errorf(path+".immutable", "expected true or false, got %s", describeValue(v))
	}
	if !on {
		return
	}
	b.recordRule(ruleAt(fieldAt, len(p.XValidations)), path+".immutable")
	p.XValidations = append(p.XValidations, apiextensionsv1.ValidationRule{
		Rule:    "self == oldSelf",
		Message: fmt.Sprintf("is immutable: it cannot change once the %s is created", b.kind),
	})
}

// presenceRule returns the rule, on an object, that keeps its immutable field name set or unset
// as the object (a kind's) was created: a field's own rule only compares values both have. A
// required field, or one with a default, is always there and needs none.
func presenceRule(name, kind string) (apiextensionsv1.ValidationRule, bool) {
	escaped, ok := apiservercel.Escape(name)
	if !ok {
		return apiextensionsv1.ValidationRule{}, false
	}
	fieldPath := "." + name
	if !fieldpath.IsIdentifier(name) {
		fieldPath = "['" + name + "']"
	}
	return apiextensionsv1.ValidationRule{
		Rule:      fmt.Sprintf("has(self.%s) == has(oldSelf.%s)", escaped, escaped),
		Message:   fmt.Sprintf("is immutable: it cannot be set or removed once the %s is created", kind),
		FieldPath: fieldPath,
	}, true
}

// addPresence gives object s, at at, the presence rule of its field name when the field, declared
// as v at path, is immutable and not always there (p is its schema).
func (b *schemaBuilder) addPresence(path string, at *field.Path, name string, v any, p apiextensionsv1.JSONSchemaProps, required bool, s *apiextensionsv1.JSONSchemaProps) {
	m, _ := v.(map[string]any)
	if on, _ := m["immutable"].(bool); !on || required || p.Default != nil {
		return
	}
	r, ok := presenceRule(name, b.kind)
	if !ok {
		return
	}
	b.recordRule(ruleAt(at, len(s.XValidations)), path+".immutable")
	s.XValidations = append(s.XValidations, r)
}

// recordRule records a rule metacel writes for a key (immutable) at the key itself, the rule's
// own fields included.
func (b *schemaBuilder) recordRule(at *field.Path, path string) {
	b.record(at, path)
	for _, k := range []string{"rule", "message", "fieldPath"} {
		b.record(at.Child(k), path)
	}
}
