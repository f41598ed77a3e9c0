package parentcrd_test

// The tests build CRDs as a policy declares them, through the loader (policy.Parse, Validate and
// ParentCRD): the declaration decodes as the policy's YAML does, and the errors are read as the
// author reads them, at their lines.

import (
	"encoding/json"
	"strings"
	"testing"

	"k8s.io/apiextensions-apiserver/pkg/apis/apiextensions"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	structuralschema "k8s.io/apiextensions-apiserver/pkg/apiserver/schema"
	structuraldefaulting "k8s.io/apiextensions-apiserver/pkg/apiserver/schema/defaulting"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/yaml"

	"metacel.dev/metacel/runtime/kinds"
	"metacel.dev/metacel/runtime/policy"
)

// declaring is a policy whose parentSchema's body follows; it has 8 lines, so the body starts at
// line 9.
const declaring = `apiVersion: metacel.dev/v1alpha1
kind: CompositePolicy
metadata:
  name: website
spec:
  parentResource: {apiVersion: example.com/v1, resource: websites}
  parentSchema:
    kind: Website
`

// parseOne parses a policy that must parse and validate.
func parseOne(t *testing.T, text string) *policy.Document {
	t.Helper()
	docs, err := policy.Parse("p.yaml", []byte(text))
	if err != nil || len(docs) != 1 {
		t.Fatalf("parse: %v (%d documents)", err, len(docs))
	}
	if err := policy.Validate(docs[0]); err != nil {
		t.Fatalf("validate: %v", err)
	}
	return docs[0]
}

func parentCRD(t *testing.T, text string) *apiextensionsv1.CustomResourceDefinition {
	t.Helper()
	crd, err := policy.ParentCRD(parseOne(t, text))
	if err != nil {
		t.Fatalf("ParentCRD:\n%v", err)
	}
	return crd
}

func rootSchema(crd *apiextensionsv1.CustomResourceDefinition) *apiextensionsv1.JSONSchemaProps {
	return crd.Spec.Versions[0].Schema.OpenAPIV3Schema
}

// structural checks a schema with the API server's structural schema checks and returns it in
// the form the API server defaults objects with.
func structural(t *testing.T, s *apiextensionsv1.JSONSchemaProps) *structuralschema.Structural {
	t.Helper()
	internal := &apiextensions.JSONSchemaProps{}
	if err := apiextensionsv1.Convert_v1_JSONSchemaProps_To_apiextensions_JSONSchemaProps(s, internal, nil); err != nil {
		t.Fatal(err)
	}
	ss, err := structuralschema.NewStructural(internal)
	if err != nil {
		t.Fatalf("not structural: %v", err)
	}
	if errs := structuralschema.ValidateStructural(field.NewPath("openAPIV3Schema"), ss); len(errs) > 0 {
		t.Fatalf("not structural: %v", errs.ToAggregate())
	}
	return ss
}

// canonical returns YAML as sorted JSON, to compare schemas.
func canonical(t *testing.T, v any) string {
	t.Helper()
	if s, ok := v.(string); ok {
		var x any
		if err := yaml.Unmarshal([]byte(s), &x); err != nil {
			t.Fatal(err)
		}
		v = x
	}
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var x any
	_ = json.Unmarshal(b, &x)
	b, _ = json.Marshal(x)
	return string(b)
}

func TestACompactSchemaBecomesAStructuralCRD(t *testing.T) {
	tests := []struct {
		name, field string // field is declared as spec.parentSchema.spec.f
		want        string // the schema of spec.f, as YAML
	}{
		{"a type name alone", "string", "{type: string, maxLength: 1024}"},
		{"an integer with its bounds and default", "{type: integer, default: 1, minimum: 0, maximum: 10}",
			"{type: integer, default: 1, minimum: 0, maximum: 10}"},
		{"a number", "{type: number, minimum: 0.5}", "{type: number, minimum: 0.5}"},
		{"a boolean", "boolean", "{type: boolean}"},
		{"a string keeps its own bound, pattern and description", "{type: string, maxLength: 63, pattern: '^[a-z]+$', description: A name.}",
			"{type: string, maxLength: 63, pattern: '^[a-z]+$', description: A name.}"},
		{"an enum bounds a string", "{type: string, enum: [Small, Large], default: Small}",
			"{type: string, enum: [Small, Large], default: Small}"},
		{"a list of strings gets both bounds", "{type: array, items: string}",
			"{type: array, maxItems: 100, items: {type: string, maxLength: 1024}}"},
		{"items alone make a list", "{items: {type: integer}, maxItems: 5}",
			"{type: array, maxItems: 5, items: {type: integer}}"},
		{"a nested object with a required field", "{properties: {host: {type: string, required: true}, port: {type: integer, default: 80}}}",
			"{type: object, required: [host], properties: {host: {type: string, maxLength: 1024}, port: {type: integer, default: 80}}}"},
		{"an object whose fields have defaults defaults to {}", "{type: object, properties: {port: {type: integer, default: 80}}}",
			"{type: object, default: {}, properties: {port: {type: integer, default: 80}}}"},
		{"a map", "{type: object, additionalProperties: string}",
			"{type: object, maxProperties: 100, additionalProperties: {type: string, maxLength: 1024}}"},
		{"an object of no declared fields holds any", "object",
			"{type: object, x-kubernetes-preserve-unknown-fields: true}"},
		{"a list of objects", "{type: array, maxItems: 8, items: {properties: {name: {type: string, maxLength: 63, required: true}}}}",
			"{type: array, maxItems: 8, items: {type: object, required: [name], properties: {name: {type: string, maxLength: 63}}}}"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			crd := parentCRD(t, declaring+"    spec:\n      f: "+tc.field+"\n")
			structural(t, rootSchema(crd))
			got := rootSchema(crd).Properties["spec"].Properties["f"]
			if canonical(t, got) != canonical(t, tc.want) {
				t.Errorf("spec.f is\n%s\nwant\n%s", canonical(t, got), canonical(t, tc.want))
			}
		})
	}
}

func TestTheCRDHasTheNamesScopeVersionAndColumnsOfThePolicy(t *testing.T) {
	crd := parentCRD(t, strings.Replace(declaring, "example.com/v1", "example.com/v2beta1", 1)+
		"    scope: Cluster\n    shortNames: [ws]\n    description: A website.\n")
	if crd.Name != "websites.example.com" || crd.Spec.Group != "example.com" || crd.Spec.Scope != apiextensionsv1.ClusterScoped {
		t.Errorf("name %q, group %q, scope %q", crd.Name, crd.Spec.Group, crd.Spec.Scope)
	}
	want := apiextensionsv1.CustomResourceDefinitionNames{Plural: "websites", Singular: "website", Kind: "Website", ListKind: "WebsiteList", ShortNames: []string{"ws"}}
	if canonical(t, crd.Spec.Names) != canonical(t, want) {
		t.Errorf("names %+v, want %+v", crd.Spec.Names, want)
	}
	v := crd.Spec.Versions
	if len(v) != 1 || v[0].Name != "v2beta1" || !v[0].Served || !v[0].Storage || v[0].Subresources == nil || v[0].Subresources.Status == nil {
		t.Fatalf("want one served and stored version v2beta1 with the status subresource, got %+v", v)
	}
	var columns []string
	for _, c := range v[0].AdditionalPrinterColumns {
		columns = append(columns, c.Name+" "+c.JSONPath)
	}
	if got := strings.Join(columns, ", "); !strings.Contains(got, `Synced .status.conditions[?(@.type=="Synced")].status`) ||
		!strings.Contains(got, `Ready .status.conditions[?(@.type=="Ready")].status`) {
		t.Errorf("columns %s, want Synced and Ready from the conditions", got)
	}
	if rootSchema(crd).Description != "A website." {
		t.Errorf("description %q", rootSchema(crd).Description)
	}
}

func TestTheStatusHoldsWhatMetacelWrites(t *testing.T) {
	text := declaring + "    status:\n      url: string\n  status:\n    url: x\n"
	crd := parentCRD(t, text)
	status := rootSchema(crd).Properties["status"]
	for _, f := range []string{"url", "conditions", "observedGeneration"} {
		if _, ok := status.Properties[f]; !ok {
			t.Errorf("status.%s is not declared", f)
		}
	}
	conds := status.Properties["conditions"]
	if conds.XListType == nil || *conds.XListType != "map" || len(conds.XListMapKeys) != 1 || conds.XListMapKeys[0] != "type" {
		t.Errorf("conditions must be a map list keyed by type, got %+v", conds)
	}
	for _, f := range []string{"type", "status", "reason", "message", "lastTransitionTime", "observedGeneration"} {
		if _, ok := conds.Items.Schema.Properties[f]; !ok {
			t.Errorf("conditions[].%s is not declared", f)
		}
	}
	// the loader's check of a parent's status accepts it
	cat := kinds.NewCatalog()
	cat.AddCRD(crd)
	if _, err := policy.Load("p.yaml", []byte(text), cat); err != nil {
		t.Errorf("the generated status cannot hold the policy's status: %v", err)
	}
}

// TestDefaultsApplyAsTheAPIServerAppliesThem defaults objects with the API server's code.
func TestDefaultsApplyAsTheAPIServerAppliesThem(t *testing.T) {
	crd := parentCRD(t, declaring+`    spec:
      replicas: {type: integer, default: 1}
      tls: {properties: {port: {type: integer, default: 443}}}
`)
	s := structural(t, rootSchema(crd))
	tests := []struct{ name, obj, want string }{
		{"no spec at all", "{}", "{spec: {replicas: 1, tls: {port: 443}}}"},
		{"a spec with one field", "{spec: {tls: {}}}", "{spec: {replicas: 1, tls: {port: 443}}}"},
		{"a given value stays", "{spec: {replicas: 3}}", "{spec: {replicas: 3, tls: {port: 443}}}"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var obj any
			_ = yaml.Unmarshal([]byte(tc.obj), &obj)
			structuraldefaulting.Default(obj, s)
			if canonical(t, obj) != canonical(t, tc.want) {
				t.Errorf("got %s, want %s", canonical(t, obj), canonical(t, tc.want))
			}
		})
	}
}

func TestAnUnknownSchemaKeyIsAnErrorAtItsLine(t *testing.T) {
	tests := []struct {
		name, decl string // decl follows line 8
		want       string
	}{
		{"a misspelt key", "    spec:\n      replicas: {type: integer, defaults: 1}\n",
			`p.yaml:10: spec.parentSchema.spec.replicas.defaults: unknown key "defaults" (did you mean "default"?)`},
		{"a misspelt key in block style", "    spec:\n      name:\n        type: string\n        maxLenght: 10\n",
			`p.yaml:12: spec.parentSchema.spec.name.maxLenght: unknown key "maxLenght" (did you mean "maxLength"?)`},
		{"a nested field without properties", "    spec:\n      tls:\n        type: object\n        port: integer\n",
			`p.yaml:12: spec.parentSchema.spec.tls.port: unknown key "port": a field has the keys `},
		{"a misspelt key deep in a list", "    spec:\n      hosts:\n        items:\n          properties:\n            name: {type: string, patern: x}\n",
			`p.yaml:13: spec.parentSchema.spec.hosts.items.properties.name.patern: unknown key "patern" (did you mean "pattern"?)`},
		{"an unknown type", "    status:\n      url: strng\n",
			`p.yaml:10: spec.parentSchema.status.url: unknown type "strng" (did you mean "string"?)`},
		{"another language's type", "    spec:\n      replicas: {type: int}\n",
			`p.yaml:10: spec.parentSchema.spec.replicas.type: unknown type "int" (did you mean "integer"?)`},
		{"a misspelt field of the parent schema", "    sepc: {}\n",
			`p.yaml:9: spec.parentSchema.sepc: unknown field "sepc" (did you mean "spec"?)`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := loadDeclaration(declaring + tc.decl)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("got\n%v\nwant an error containing\n%s", err, tc.want)
			}
		})
	}
}

// loadDeclaration parses, validates and builds the CRD of a policy, and returns every error.
func loadDeclaration(text string) error {
	docs, err := policy.Parse("p.yaml", []byte(text))
	if err != nil {
		return err
	}
	if err := policy.Validate(docs[0]); err != nil {
		return err
	}
	_, err = policy.ParentCRD(docs[0])
	return err
}

func TestADeclarationTheAPIServerWouldRefuseIsAnError(t *testing.T) {
	tests := []struct {
		name, policy string
		want         string
	}{
		{"no kind", strings.Replace(declaring, "    kind: Website\n", "    scope: Namespaced\n", 1),
			"p.yaml:7: spec.parentSchema: kind is required"},
		{"a lowercase plural it cannot serve", strings.Replace(declaring, "kind: Website", "kind: Web_site", 1),
			`p.yaml:8: spec.parentSchema.kind: "Web_site" is not a valid name here`},
		{"an unknown scope", declaring + "    scope: Namespace\n",
			`p.yaml:9: spec.parentSchema.scope: must be Namespaced or Cluster, got "Namespace" (did you mean "Namespaced"?)`},
		{"the core group", strings.Replace(declaring, "example.com/v1", "v1", 1),
			`p.yaml:6: spec.parentResource.apiVersion: "v1" is in the core group`},
		{"a group without a dot", strings.Replace(declaring, "example.com/v1", "example/v1", 1),
			`must be a domain name with at least one dot`},
		{"a Kubernetes group", strings.Replace(declaring, "example.com/v1", "sites.k8s.io/v1", 1),
			`the group "sites.k8s.io" is reserved for Kubernetes' own APIs`},
		{"a default of the wrong type", declaring + "    spec:\n      replicas: {type: integer, default: one}\n",
			`p.yaml:10: spec.parentSchema.spec.replicas.default: the API server refuses it: Invalid value: "string": must be of type integer`},
		{"a default above the maximum", declaring + "    spec:\n      replicas: {type: integer, default: 20, maximum: 10}\n",
			`p.yaml:10: spec.parentSchema.spec.replicas.default: the API server refuses it: Invalid value: 20: should be less than or equal to 10`},
		{"a default outside the enum", declaring + "    spec:\n      size: {type: string, enum: [S, M], default: L}\n",
			`p.yaml:10: spec.parentSchema.spec.size.default: the API server refuses it: Unsupported value: "L": supported values: "S", "M"`},
		{"an enum value of another type", declaring + "    spec:\n      size: {type: string, enum: [S, 2]}\n",
			`p.yaml:10: spec.parentSchema.spec.size.enum[1]: expected a string, as the field's type says, got an integer 2`},
		{"an enum of booleans", declaring + "    spec:\n      on: {type: boolean, enum: [true]}\n",
			`p.yaml:10: spec.parentSchema.spec.on.enum: enum applies to fields of type string, integer or number, not to this boolean`},
		{"a key of another type", declaring + "    spec:\n      replicas: {type: integer, maxLength: 3}\n",
			`p.yaml:10: spec.parentSchema.spec.replicas.maxLength: maxLength applies to fields of type string, not to this integer`},
		{"a list without items", declaring + "    spec:\n      hosts: array\n",
			`p.yaml:10: spec.parentSchema.spec.hosts: a list needs the type of its items`},
		{"a required list item", declaring + "    spec:\n      hosts: {items: {type: string, required: true}}\n",
			`p.yaml:10: spec.parentSchema.spec.hosts.items.required: only a field of an object can be required`},
		{"a bad pattern", declaring + "    spec:\n      name: {type: string, pattern: '[a-'}\n",
			`p.yaml:10: spec.parentSchema.spec.name.pattern: "[a-" is not a regular expression`},
		{"a negative bound", declaring + "    spec:\n      name: {type: string, maxLength: -1}\n",
			`p.yaml:10: spec.parentSchema.spec.name.maxLength: expected a count (an integer, 0 or more), got an integer -1`},
		{"bounds the wrong way round", declaring + "    spec:\n      n: {type: integer, minimum: 5, maximum: 1}\n",
			`p.yaml:10: spec.parentSchema.spec.n.minimum: 5 is more than the maximum 1`},
		{"a field metacel writes", declaring + "    status:\n      conditions: {type: array, items: object}\n",
			`p.yaml:10: spec.parentSchema.status.conditions: metacel declares status.conditions itself`},
		{"no type", declaring + "    spec:\n      name: {description: A name.}\n",
			`p.yaml:10: spec.parentSchema.spec.name: type is required: one of string, integer`},
		{"a null field", declaring + "    spec:\n      name:\n",
			`p.yaml:10: spec.parentSchema.spec.name: expected a type (string, integer, number, boolean, object, array) or a field`},
		{"both properties and a map's values", declaring + "    spec:\n      m: {properties: {a: string}, additionalProperties: string}\n",
			`p.yaml:10: spec.parentSchema.spec.m.additionalProperties: an object has either properties`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := loadDeclaration(tc.policy)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("got\n%v\nwant an error containing\n%s", err, tc.want)
			}
		})
	}
}

// TestDeclaredBoundsMakeCELCostFinite loads an expression that walks a declared list of strings:
// with the bounds the CRD gets by default its cost is within the limit; without any, the API
// server's request limit makes it far too dear.
func TestDeclaredBoundsMakeCELCostFinite(t *testing.T) {
	text := declaring + `    spec:
      hosts: {type: array, items: string}
  childResources: [{apiVersion: v1, resource: configmaps}]
  validations:
    - expression: "parent.spec.hosts.all(h, h.contains('.'))"
`
	crd := parentCRD(t, text)
	unbounded := crd.DeepCopy()
	hosts := rootSchema(unbounded).Properties["spec"].Properties["hosts"]
	hosts.MaxItems, hosts.Items.Schema.MaxLength = nil, nil
	rootSchema(unbounded).Properties["spec"].Properties["hosts"] = hosts
	tests := []struct {
		name    string
		crd     *apiextensionsv1.CustomResourceDefinition
		loads   bool
		wantErr string
	}{
		{"declared with default bounds", crd, true, ""},
		{"without bounds", unbounded, false, "cost"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cat := kinds.NewCatalog()
			cat.AddCRD(tc.crd)
			_, err := policy.Load("p.yaml", []byte(text), cat)
			if (err == nil) != tc.loads || (err != nil && !strings.Contains(err.Error(), tc.wantErr)) {
				t.Errorf("loads: %v, want %v (error containing %q)", err, tc.loads, tc.wantErr)
			}
		})
	}
}

// TestTheDeclaredSchemaCatchesMisspeltParentFields loads a policy against the CRD it declares: a
// field it does not declare is an error with the field meant.
func TestTheDeclaredSchemaCatchesMisspeltParentFields(t *testing.T) {
	text := declaring + `    spec:
      html: string
  childResources: [{apiVersion: v1, resource: configmaps}]
  validations:
    - expression: "parent.spec.htm != ''"
`
	cat := kinds.NewCatalog()
	cat.AddCRD(parentCRD(t, text))
	_, err := policy.Load("p.yaml", []byte(text), cat)
	if err == nil || !strings.Contains(err.Error(), `undefined field 'htm' (did you mean "html"?)`) {
		t.Errorf("got %v", err)
	}
}
