package policy

import (
	"encoding/json"
	"os"
	"strings"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"metacel.dev/metacel/runtime/kinds"
)

// The CRD a parentSchema declares is package parentcrd's, and tested there; these tests are of
// what the loader does with it.

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
func parseOne(t *testing.T, text string) *Document {
	t.Helper()
	docs, err := Parse("p.yaml", []byte(text))
	if err != nil || len(docs) != 1 {
		t.Fatalf("parse: %v (%d documents)", err, len(docs))
	}
	if err := Validate(docs[0]); err != nil {
		t.Fatalf("validate: %v", err)
	}
	return docs[0]
}

func TestAPolicyWithoutAParentSchemaHasNoCRD(t *testing.T) {
	doc := parseOne(t, strings.Replace(declaring, "  parentSchema:\n    kind: Website\n", "", 1))
	if _, err := ParentCRD(doc); err == nil || !strings.Contains(err.Error(), "p.yaml:5: spec: declares no parentSchema") {
		t.Errorf("got %v", err)
	}
	known := kinds.Info{Guessed: true}
	if got, _, err := declaredParent(doc, known); err != nil || got != known {
		t.Errorf("declaredParent changed %+v to %+v (%v)", known, got, err)
	}
}

// TestTheDeclaredSchemaTypesTheParentUnlessItsCRDIsKnown checks declaredParent, which the loader
// uses for the parent: a parent the mapper does not know is typed by the declaration, one it
// knows (a CRD given with --crd, or installed) keeps its CRD's schema.
func TestTheDeclaredSchemaTypesTheParentUnlessItsCRDIsKnown(t *testing.T) {
	doc := parseOne(t, declaring+"    scope: Cluster\n    spec:\n      html: string\n")
	gvr := schema.GroupVersionResource{Group: "example.com", Version: "v1", Resource: "websites"}
	given := &apiextensionsv1.JSONSchemaProps{Type: "object"}
	tests := []struct {
		name  string
		known kinds.Info
		check func(t *testing.T, got kinds.Info)
	}{
		{"unknown: the declaration", kinds.Info{GVR: gvr, Namespaced: true, Guessed: true}, func(t *testing.T, got kinds.Info) {
			if got.Schema == nil || got.Schema.Properties["spec"].Properties["html"].Type != "string" {
				t.Errorf("the parent is not typed by the declaration: %+v", got.Schema)
			}
			if got.Kind != "Website" || got.Namespaced || !got.HasStatus || !got.Guessed {
				t.Errorf("want kind Website, cluster-scoped, with status, still not served; got %+v", got)
			}
		}},
		{"known: its CRD wins", kinds.Info{GVR: gvr, Kind: "Website", Namespaced: true, Schema: given}, func(t *testing.T, got kinds.Info) {
			if got.Schema != given || !got.Namespaced || got.Guessed {
				t.Errorf("the known CRD lost: %+v", got)
			}
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, _, err := declaredParent(doc, tc.known)
			if err != nil {
				t.Fatal(err)
			}
			tc.check(t, got)
		})
	}
	bad := parseOne(t, declaring+"    spec:\n      html: strin\n")
	if _, _, err := declaredParent(bad, kinds.Info{GVR: gvr, Schema: given}); err == nil || !strings.Contains(err.Error(), "p.yaml:10:") {
		t.Errorf("a broken declaration must be an error even when the CRD is known, got %v", err)
	}
}

// The CRD the runtime installs carries the policy's ParentDeclaration, which a runtime started
// after the policy changed reads back to convert the CRD's parents: what it reads must declare the
// same CRD and the same conversions, whatever YAML the policy was written in.
func TestAParentDeclarationReadsBackAsThePolicysDeclaration(t *testing.T) {
	cache, err := os.ReadFile("../conversion/testdata/cache.yaml")
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct{ name, text string }{
		{name: "versions with their conversions", text: string(cache)},
		{name: "rules, columns, defaults and scalars YAML reads as other types", text: declaring + `    install: true
    scope: Cluster
    shortNames: [ws]
    x-kubernetes-validations: [{rule: "self.spec.replicas <= 10", message: at most 10}]
    printerColumns: [{name: Replicas, jsonPath: .spec.replicas}]
    spec:
      replicas: {type: integer, default: 2, minimum: 1.0}
      ratio: {type: number, maximum: 2.5}
      mode: {type: string, enum: ["yes", "on", "1.0"], default: "on"}
      since: {type: string, default: "2024-01-01"}
      tags: {type: array, items: string, maxItems: 3}
    status:
      phase: string
  childResources: [{apiVersion: v1, resource: configmaps}]
  children:
    - id: cm
      template: {apiVersion: v1, kind: ConfigMap, metadata: {name: x}}
`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			doc := parseOne(t, tt.text)
			data, err := ParentDeclaration(doc)
			if err != nil {
				t.Fatal(err)
			}
			read, err := ReadParentDeclaration("the CRD's annotation", data)
			if err != nil {
				t.Fatalf("ReadParentDeclaration(%s) = %v", data, err)
			}
			if read.Policy.Metadata.Name != doc.Policy.Metadata.Name || read.Policy.Spec.ParentResource.APIVersion != doc.Policy.Spec.ParentResource.APIVersion ||
				read.Policy.Spec.ParentResource.Resource != doc.Policy.Spec.ParentResource.Resource {
				t.Errorf("read back as policy %q of %+v, want %q of %+v", read.Policy.Metadata.Name, read.Policy.Spec.ParentResource,
					doc.Policy.Metadata.Name, doc.Policy.Spec.ParentResource)
			}
			for what, of := range map[string]func(*Document) any{
				"the CRD": func(d *Document) any {
					crd, err := ParentCRD(d)
					if err != nil {
						t.Fatal(err)
					}
					return crd
				},
				"the parentSchema, its conversions included": func(d *Document) any { return d.Policy.Spec.ParentSchema },
			} {
				want, _ := json.Marshal(of(doc))
				if got, _ := json.Marshal(of(read)); string(got) != string(want) {
					t.Errorf("%s read back differs:\n got %s\nwant %s", what, got, want)
				}
			}
			if _, err := CompileConversion(read); err != nil {
				t.Errorf("the conversions read back do not compile: %v", err)
			}
		})
	}
}
