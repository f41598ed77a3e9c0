package policy

import (
	"maps"
	"reflect"
	"slices"
	"strings"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// JSONSchema returns a JSON Schema (draft-07) of the CompositePolicy format, generated from the
// Go types so that the two cannot drift: editors (yaml-language-server) complete and check policy
// files with it. Free-form fields (templates, status) accept anything; enums come from the
// constants the validator accepts.
func JSONSchema() map[string]any {
	s := schemaOf(reflect.TypeFor[CompositePolicy]())
	s["$schema"] = "http://json-schema.org/draft-07/schema#"
	s["$id"] = "https://metacel.dev/schemas/compositepolicy.json"
	s["title"] = "metacel CompositePolicy (" + APIVersion + ")"
	props := s["properties"].(map[string]any)
	props["apiVersion"] = map[string]any{"const": APIVersion}
	props["kind"] = map[string]any{"const": Kind}
	s["definitions"] = map[string]any{"field": fieldDefinition()}
	return s
}

// fieldRef refers to the definition of a declared field of a parent schema.
var fieldRef = map[string]any{"$ref": "#/definitions/field"}

// fieldKeyValues are the JSON Schemas of the values of a declared field's keys (fieldKeys).
var fieldKeyValues = map[string]map[string]any{
	"type":                 {"type": "string", "enum": anySlice(fieldTypes)},
	"description":          {"type": "string"},
	"required":             {"type": "boolean"},
	"default":              {},
	"enum":                 {"type": "array", "minItems": 1},
	"minimum":              {"type": "number"},
	"maximum":              {"type": "number"},
	"minLength":            {"type": "integer", "minimum": 0},
	"maxLength":            {"type": "integer", "minimum": 0},
	"pattern":              {"type": "string", "format": "regex"},
	"minItems":             {"type": "integer", "minimum": 0},
	"maxItems":             {"type": "integer", "minimum": 0},
	"items":                fieldRef,
	"properties":           {"type": "object", "additionalProperties": fieldRef},
	"additionalProperties": fieldRef,
	"maxProperties":        {"type": "integer", "minimum": 0},
}

// fieldDefinition is the JSON Schema of a declared field: a type name, or an object of the keys
// fieldKeys lists.
func fieldDefinition() map[string]any {
	props := map[string]any{}
	for _, k := range slices.Sorted(maps.Keys(fieldKeys)) {
		props[k] = fieldKeyValues[k]
	}
	return map[string]any{
		"description": "A field: a type name, or an object of type, default, bounds and nested fields.",
		"anyOf": []any{
			map[string]any{"type": "string", "enum": anySlice(fieldTypes)},
			map[string]any{"type": "object", "properties": props, "additionalProperties": false},
		},
	}
}

func anySlice(s []string) []any {
	out := make([]any, len(s))
	for i, x := range s {
		out[i] = x
	}
	return out
}

// enums of named string types.
var enums = map[reflect.Type][]any{
	reflect.TypeFor[UpdateMethod]():                  {string(InPlace), string(Recreate), string(OnDelete)},
	reflect.TypeFor[DeletionPolicy]():                {string(DeletionDelete), string(DeletionOrphan)},
	reflect.TypeFor[apiextensionsv1.ResourceScope](): {string(apiextensionsv1.NamespaceScoped), string(apiextensionsv1.ClusterScoped)},
}

// required lists the fields a document must have, by type and JSON name; Validate enforces them
// (ParentCRD a parent schema's kind).
var required = map[reflect.Type][]string{
	reflect.TypeFor[CompositePolicy](): {"apiVersion", "kind", "metadata", "spec"},
	reflect.TypeFor[ObjectMeta]():      {"name"},
	reflect.TypeFor[Spec]():            {"parentResource"},
	reflect.TypeFor[ParentResource]():  {"apiVersion", "resource"},
	reflect.TypeFor[ChildResource]():   {"apiVersion", "resource"},
	reflect.TypeFor[Validation]():      {"expression"},
	reflect.TypeFor[Variable]():        {"name", "expression"},
	reflect.TypeFor[Related]():         {"id", "apiVersion", "resource"},
	reflect.TypeFor[Child]():           {"id"},
	reflect.TypeFor[ParentSchema]():    {"kind"},
	reflect.TypeFor[Rollout]():         {"steps"},
	reflect.TypeFor[RolloutStep]():     {"percent"},
}

// bounds are the limits Validate enforces on fields, by type and JSON name, added to their schemas.
var bounds = map[reflect.Type]map[string]map[string]any{
	reflect.TypeFor[Rollout]():     {"steps": {"minItems": 1}, "healthDeadlineSeconds": {"minimum": 1}},
	reflect.TypeFor[RolloutStep](): {"percent": {"minimum": 1, "maximum": 100}, "pauseSeconds": {"minimum": 0}},
}

// countOrPercent is the schema of an intstr.IntOrString: in a policy, a count or a percentage.
var countOrPercent = map[string]any{
	"description": `A count, or a percentage string such as "10%".`,
	"anyOf": []any{
		map[string]any{"type": "integer", "minimum": 0},
		map[string]any{"type": "string", "pattern": "^0*(100|[1-9]?[0-9])%$"},
	},
}

func schemaOf(t reflect.Type) map[string]any {
	if e, ok := enums[t]; ok {
		return map[string]any{"type": "string", "enum": e}
	}
	if t == reflect.TypeFor[intstr.IntOrString]() {
		return maps.Clone(countOrPercent)
	}
	if t == reflect.TypeFor[Fields]() {
		return map[string]any{"type": "object", "additionalProperties": fieldRef}
	}
	switch t.Kind() {
	case reflect.Pointer:
		return schemaOf(t.Elem())
	case reflect.String:
		return map[string]any{"type": "string"}
	case reflect.Bool:
		return map[string]any{"type": "boolean"}
	case reflect.Int, reflect.Int32, reflect.Int64:
		return map[string]any{"type": "integer"}
	case reflect.Slice:
		return map[string]any{"type": "array", "items": schemaOf(t.Elem())}
	case reflect.Map:
		if t.Elem().Kind() == reflect.Interface {
			return map[string]any{"type": "object"} // a free-form template
		}
		return map[string]any{"type": "object", "additionalProperties": schemaOf(t.Elem())}
	case reflect.Struct:
		props := map[string]any{}
		for i := range t.NumField() {
			name, _, _ := strings.Cut(t.Field(i).Tag.Get("json"), ",")
			if name != "" && name != "-" {
				props[name] = schemaOf(t.Field(i).Type)
				maps.Copy(props[name].(map[string]any), bounds[t][name])
			}
		}
		s := map[string]any{"type": "object", "properties": props, "additionalProperties": false}
		if r := required[t]; len(r) > 0 {
			s["required"] = r
		}
		return s
	}
	return map[string]any{}
}
