package policy

import (
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/yaml"

	"metacel.dev/metacel/runtime/kinds"
	"metacel.dev/metacel/runtime/parentcrd"
)

// jsonSchema returns a JSON Schema (draft-07) of the CompositePolicy format, generated from the
// Go types so that the two cannot drift: editors (yaml-language-server) complete and check policy
// files with it. Free-form fields (templates, status) accept anything; enums come from the
// constants the validator accepts. It is the generator of schemas/compositepolicy.json, which
// TestJSONSchemaFile writes again under METACEL_UPDATE_GOLDEN=1 (`make golden`): no program
// needs it, so it lives with its test.
func jsonSchema() map[string]any {
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

// fieldKeyValues are the JSON Schemas of the values of a declared field's keys
// (parentcrd.FieldKeys).
var fieldKeyValues = map[string]map[string]any{
	"type":                     {"type": "string", "enum": anySlice(parentcrd.FieldTypes())},
	"description":              {"type": "string"},
	"required":                 {"type": "boolean"},
	"default":                  {},
	"enum":                     {"type": "array", "minItems": 1},
	"minimum":                  {"type": "number"},
	"maximum":                  {"type": "number"},
	"minLength":                {"type": "integer", "minimum": 0},
	"maxLength":                {"type": "integer", "minimum": 0},
	"pattern":                  {"type": "string", "format": "regex"},
	"minItems":                 {"type": "integer", "minimum": 0},
	"maxItems":                 {"type": "integer", "minimum": 0},
	"items":                    fieldRef,
	"properties":               {"type": "object", "additionalProperties": fieldRef},
	"additionalProperties":     fieldRef,
	"maxProperties":            {"type": "integer", "minimum": 0},
	"format":                   {"type": "string", "enum": anySlice(parentcrd.Formats())},
	"immutable":                {"type": "boolean"},
	"x-kubernetes-validations": {"type": "array", "items": schemaOf(reflect.TypeFor[ValidationRule]())},
}

// fieldDefinition is the JSON Schema of a declared field: a type name, or an object of the keys
// parentcrd.FieldKeys lists.
func fieldDefinition() map[string]any {
	props := map[string]any{}
	for _, k := range parentcrd.FieldKeys() {
		props[k] = fieldKeyValues[k]
	}
	return map[string]any{
		"description": "A field: a type name, or an object of type, default, bounds and nested fields.",
		"anyOf": []any{
			map[string]any{"type": "string", "enum": anySlice(parentcrd.FieldTypes())},
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
	reflect.TypeFor[ValidationRule]():  {"rule"},
	reflect.TypeFor[PrinterColumn]():   {"name", "jsonPath"},
	reflect.TypeFor[Rollout]():         {"steps"},
	reflect.TypeFor[RolloutStep]():     {"percent"},
}

// bounds are the limits Validate enforces on fields, by type and JSON name, added to their schemas.
var bounds = map[reflect.Type]map[string]map[string]any{
	reflect.TypeFor[Rollout]():       {"steps": {"minItems": 1}, "healthDeadlineSeconds": {"minimum": 1}},
	reflect.TypeFor[RolloutStep]():   {"percent": {"minimum": 1, "maximum": 100}, "pauseSeconds": {"minimum": 0}},
	reflect.TypeFor[PrinterColumn](): {"type": {"enum": anySlice(parentcrd.ColumnTypes())}, "priority": {"minimum": 0}},
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

// TestJSONSchemaFile checks that schemas/compositepolicy.json is the schema of the Go types
// (regenerate with METACEL_UPDATE_GOLDEN=1, or `make golden`).
func TestJSONSchemaFile(t *testing.T) {
	b, err := json.MarshalIndent(jsonSchema(), "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join("..", "..", "schemas", "compositepolicy.json")
	if os.Getenv("METACEL_UPDATE_GOLDEN") != "" {
		if err := os.WriteFile(path, append(b, '\n'), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if string(want) != string(b)+"\n" {
		t.Errorf("%s is not the schema of the Go types: regenerate it with METACEL_UPDATE_GOLDEN=1 go test ./runtime/policy (make golden)", path)
	}
}

// TestJSONSchemaAgreesWithTheParser checks the schema against documents: every seed policy
// passes, and documents the parser rejects for their shape fail it too.
func TestJSONSchemaAgreesWithTheParser(t *testing.T) {
	schema := jsonSchema()
	files, _ := filepath.Glob(filepath.Join("..", "..", "policies", "*.yaml"))
	for _, f := range files {
		var cm struct{ Data map[string]string }
		data, _ := os.ReadFile(f)
		if err := yaml.Unmarshal(data, &cm); err != nil {
			t.Fatal(err)
		}
		for _, text := range cm.Data {
			var doc any
			if err := yaml.Unmarshal([]byte(text), &doc); err != nil {
				t.Fatal(err)
			}
			if err := check(schema, schema, doc, ""); err != nil {
				t.Errorf("%s: %v", f, err)
			}
		}
	}
	// the policy whose declared parent `metacel crd` prints in cmd/metacel's golden test
	website, err := os.ReadFile(filepath.Join("..", "..", "cmd", "metacel", "testdata", "crd", "website.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var websiteCM struct{ Data map[string]string }
	if err := yaml.Unmarshal(website, &websiteCM); err != nil || len(websiteCM.Data) != 1 {
		t.Fatalf("website.yaml is not a ConfigMap holding a policy: %v", err)
	}
	for _, text := range websiteCM.Data {
		var doc any
		if err := yaml.Unmarshal([]byte(text), &doc); err != nil {
			t.Fatal(err)
		}
		if err := check(schema, schema, doc, ""); err != nil {
			t.Errorf("a policy declaring its parent's schema: %v", err)
		}
	}
	bad := map[string]string{
		"unknown field": "spec:\n  parentResource: {apiVersion: v1, resource: pods}\n  chidren: []\n",
		"wrong enum":    "spec:\n  parentResource: {apiVersion: v1, resource: pods}\n  childResources: [{apiVersion: v1, resource: pods, updateStrategy: {method: Sometimes}}]\n",
		"wrong type":    "spec:\n  parentResource: {apiVersion: v1, resource: pods}\n  resyncPeriodSeconds: soon\n",
		"missing field": "spec:\n  parentResource: {apiVersion: v1}\n",
		"unknown key of a declared field": "spec:\n  parentResource: {apiVersion: example.com/v1, resource: websites}\n" +
			"  parentSchema: {kind: Website, spec: {replicas: {type: integer, defaults: 1}}}\n",
		"unknown type of a declared field": "spec:\n  parentResource: {apiVersion: example.com/v1, resource: websites}\n" +
			"  parentSchema: {kind: Website, spec: {tags: {type: array, items: strng}}}\n",
	}
	for name, spec := range bad {
		text := "apiVersion: metacel.dev/v1alpha1\nkind: CompositePolicy\nmetadata: {name: x}\n" + spec
		var doc any
		_ = yaml.Unmarshal([]byte(text), &doc)
		if check(schema, schema, doc, "") == nil {
			t.Errorf("%s: the schema accepts what the parser rejects", name)
		}
		if loadWithDeclaration(text) == nil && name != "missing field" {
			t.Errorf("%s: the parser accepts it", name)
		}
	}
}

// loadWithDeclaration loads a policy and builds the CRD it declares, if any, as `metacel crd` does.
func loadWithDeclaration(text string) error {
	if _, err := Load("x.yaml", []byte(text), kinds.NewCatalog()); err != nil {
		return err
	}
	docs, _ := Parse("x.yaml", []byte(text))
	for _, doc := range docs {
		if doc.Policy.Spec.ParentSchema != nil {
			if _, err := ParentCRD(doc); err != nil {
				return err
			}
		}
	}
	return nil
}

// TestEditorsKnowEveryKeyOfAField checks that the JSON Schema of a declared field has every key
// the loader accepts, each with a schema of its value.
func TestEditorsKnowEveryKeyOfAField(t *testing.T) {
	keys := parentcrd.FieldKeys()
	for _, k := range keys {
		if _, ok := fieldKeyValues[k]; !ok {
			t.Errorf("the JSON Schema gives no schema for the key %q of a field", k)
		}
	}
	if len(fieldKeyValues) != len(keys) {
		t.Errorf("the JSON Schema has %d keys of a field, the loader %d", len(fieldKeyValues), len(keys))
	}
}

// check validates a value against the subset of JSON Schema that jsonSchema uses; root holds the
// definitions that $ref refers to.
func check(root, s map[string]any, v any, path string) error {
	if ref, ok := s["$ref"].(string); ok {
		def := root["definitions"].(map[string]any)[strings.TrimPrefix(ref, "#/definitions/")]
		return check(root, def.(map[string]any), v, path)
	}
	if anyOf, ok := s["anyOf"].([]any); ok {
		var errs []string
		for _, alt := range anyOf {
			err := check(root, alt.(map[string]any), v, path)
			if err == nil {
				return nil
			}
			errs = append(errs, err.Error())
		}
		return fmt.Errorf("%s: fits none of: %s", path, strings.Join(errs, "; "))
	}
	if c, ok := s["const"]; ok && c != v {
		return fmt.Errorf("%s: want %v", path, c)
	}
	if e, ok := s["enum"].([]any); ok {
		found := false
		for _, x := range e {
			found = found || x == v
		}
		if !found {
			return fmt.Errorf("%s: %v is not one of %v", path, v, e)
		}
	}
	switch s["type"] {
	case "object":
		m, ok := v.(map[string]any)
		if !ok {
			return fmt.Errorf("%s: want an object", path)
		}
		req, _ := s["required"].([]string)
		for _, r := range req {
			if _, ok := m[r]; !ok {
				return fmt.Errorf("%s: %s is required", path, r)
			}
		}
		props, _ := s["properties"].(map[string]any)
		for k, x := range m {
			ps, ok := props[k].(map[string]any)
			switch {
			case ok:
				if err := check(root, ps, x, path+"."+k); err != nil {
					return err
				}
			case s["additionalProperties"] == false:
				return fmt.Errorf("%s: unknown field %q", path, k)
			case s["additionalProperties"] != nil:
				if err := check(root, s["additionalProperties"].(map[string]any), x, path+"."+k); err != nil {
					return err
				}
			}
		}
	case "array":
		l, ok := v.([]any)
		if !ok {
			return fmt.Errorf("%s: want a list", path)
		}
		for i, x := range l {
			if err := check(root, s["items"].(map[string]any), x, fmt.Sprintf("%s[%d]", path, i)); err != nil {
				return err
			}
		}
	case "string":
		if _, ok := v.(string); !ok {
			return fmt.Errorf("%s: want a string", path)
		}
	case "integer":
		if f, ok := v.(float64); !ok || f != float64(int64(f)) {
			return fmt.Errorf("%s: want an integer", path)
		}
	case "number":
		if _, ok := v.(float64); !ok {
			return fmt.Errorf("%s: want a number", path)
		}
	case "boolean":
		if _, ok := v.(bool); !ok {
			return fmt.Errorf("%s: want a boolean", path)
		}
	}
	return nil
}
