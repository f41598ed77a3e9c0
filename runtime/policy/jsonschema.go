package policy

import (
	"reflect"
	"strings"
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
	return s
}

// enums of named string types.
var enums = map[reflect.Type][]any{
	reflect.TypeFor[UpdateMethod]():   {string(InPlace), string(Recreate), string(OnDelete)},
	reflect.TypeFor[DeletionPolicy](): {string(DeletionDelete), string(DeletionOrphan)},
}

// required lists the fields a document must have, by type and JSON name; Validate enforces them.
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
}

func schemaOf(t reflect.Type) map[string]any {
	if e, ok := enums[t]; ok {
		return map[string]any{"type": "string", "enum": e}
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
