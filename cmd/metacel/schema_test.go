package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	"metacel.dev/metacel/runtime/kinds"
	"metacel.dev/metacel/runtime/policy"
)

// TestJSONSchemaFile checks that schemas/compositepolicy.json is the schema of the Go types
// (regenerate with METACEL_UPDATE_GOLDEN=1, or `make golden`).
func TestJSONSchemaFile(t *testing.T) {
	b, err := json.MarshalIndent(policy.JSONSchema(), "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	golden(t, filepath.Join(repo, "schemas", "compositepolicy.json"), string(b)+"\n")
}

// TestJSONSchemaAgreesWithTheParser checks the schema against documents: every seed policy
// passes, and documents the parser rejects for their shape fail it too.
func TestJSONSchemaAgreesWithTheParser(t *testing.T) {
	schema := policy.JSONSchema()
	files, _ := filepath.Glob(filepath.Join(repo, "policies", "*.yaml"))
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
	website, err := os.ReadFile(filepath.Join("testdata", "crd", "website.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var doc any
	if err := yaml.Unmarshal(website, &doc); err != nil {
		t.Fatal(err)
	}
	if err := check(schema, schema, doc, ""); err != nil {
		t.Errorf("a policy declaring its parent's schema: %v", err)
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
	if _, err := policy.Load("x.yaml", []byte(text), kinds.NewCatalog()); err != nil {
		return err
	}
	docs, _ := policy.Parse("x.yaml", []byte(text))
	for _, doc := range docs {
		if doc.Policy.Spec.ParentSchema != nil {
			if _, err := policy.ParentCRD(doc); err != nil {
				return err
			}
		}
	}
	return nil
}

// check validates a value against the subset of JSON Schema that JSONSchema uses; root holds the
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
