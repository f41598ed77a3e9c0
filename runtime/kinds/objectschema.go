package kinds

import (
	"fmt"
	"slices"
	"strings"
	"sync"

	"k8s.io/apiextensions-apiserver/pkg/apis/apiextensions"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	structuralschema "k8s.io/apiextensions-apiserver/pkg/apiserver/schema"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/kube-openapi/pkg/schemaconv"
	"k8s.io/kube-openapi/pkg/validation/spec"
	smdschema "sigs.k8s.io/structured-merge-diff/v6/schema"
	"sigs.k8s.io/structured-merge-diff/v6/typed"

	"metacel.dev/metacel/runtime/builtinschema"
)

// Names of the types of client-go's schema that hold strings or numbers with a meaning of their own.
const (
	QuantityType    = "io.k8s.apimachinery.pkg.api.resource.Quantity"
	IntOrStringType = "io.k8s.apimachinery.pkg.util.intstr.IntOrString"
	objectMetaType  = "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"
)

// ObjectSchema is the structured-merge-diff schema of the objects of one kind: the schema the API
// server's server-side apply checks an applied object against. An ObjectSchema is immutable and
// safe for concurrent use.
type ObjectSchema struct {
	// Kind names the kind in messages.
	Kind   string
	parser typed.ParseableType
	// required and inlinedRequired hold a CRD's required fields (Required): by named type, and
	// by the inlined map of an object's type
	required        map[string][]string
	inlinedRequired map[*smdschema.Map][]string
}

// SchemaOf returns the schema of a resource's objects: for a custom resource, the one its CRD's
// OpenAPI schema (info.Schema) gives the API server; for a built-in kind, the one client-go ships.
// It returns nil, and no error, when neither is known (a guessed resource, an aggregated API, a
// built-in version client-go does not know), and an error for a CRD schema that is not structural.
// Building one costs up to a millisecond: do it once, when a policy loads.
func SchemaOf(info Info) (*ObjectSchema, error) {
	gvk := info.GVK()
	if info.Guessed || gvk.Kind == "" {
		return nil, nil
	}
	if info.Schema != nil {
		return crdObjectSchema(gvk, info.Schema)
	}
	return builtinObjectSchema(gvk), nil
}

// builtin reports whether the schema is client-go's, of a built-in kind: its numbers are
// integers (the API conventions have no fractions), which the structured-merge-diff schema does
// not say ("numeric").
func (s *ObjectSchema) builtin() bool {
	shipped, _ := builtins()
	return s.parser.Schema == shipped
}

// Types returns the structured-merge-diff types of the schema, and the type of its objects.
func (s *ObjectSchema) Types() (*smdschema.Schema, smdschema.TypeRef) {
	return s.parser.Schema, s.parser.TypeRef
}

// validate checks an object as server-side apply does before it applies one: a field the schema
// does not declare, a value of the wrong type, an item of a keyed list (containers by name) without
// its key, or two items with one key, is an error naming the field's path (.spec.replicas). Values
// the schema leaves open (x-kubernetes-preserve-unknown-fields, int-or-string, quantities) pass.
func (s *ObjectSchema) validate(obj map[string]any) error {
	_, err := s.parser.FromUnstructured(obj)
	var errs typed.ValidationErrors
	if err == nil || !asValidationErrors(err, &errs) {
		return err
	}
	// the walk visits map keys in Go's random order: sort, so that a message is the same every time
	slices.SortFunc(errs, func(a, b typed.ValidationError) int { return strings.Compare(a.Path, b.Path) })
	return errs
}

func asValidationErrors(err error, out *typed.ValidationErrors) bool {
	errs, ok := err.(typed.ValidationErrors) //nolint:errorlint // FromUnstructured returns the list itself
	*out = errs
	return ok
}

// builtins holds client-go's schema of built-in kinds, and the types ObjectMeta reaches in it.
var builtins = sync.OnceValues(func() (*smdschema.Schema, []smdschema.TypeDef) {
	shipped := &builtinschema.Parser().Schema
	return shipped, closure(shipped, objectMetaType)
})

// builtinObjectSchema returns client-go's schema of a built-in kind; nil when it does not know it.
func builtinObjectSchema(gvk schema.GroupVersionKind) *ObjectSchema {
	shipped, _ := builtins()
	tv, err := builtinschema.TypeConverter().ObjectToTyped(typeOnly(gvk))
	if err != nil || tv.Schema() != shipped {
		return nil
	}
	return &ObjectSchema{Kind: gvk.Kind, parser: typed.ParseableType{Schema: shipped, TypeRef: tv.TypeRef()}}
}

// typeOnly is an object with nothing but its apiVersion and kind.
func typeOnly(gvk schema.GroupVersionKind) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{}}
	u.SetGroupVersionKind(gvk)
	return u
}

// crdObjectSchema converts a CRD version's schema as the API server does for server-side apply
// (its OpenAPI model, with ObjectMeta for metadata and for embedded resources, through
// kube-openapi's schemaconv), with two differences that make it as strict as the API server's
// validation: an int-or-string value is a scalar (not any value), and a string with a format is a
// string (not any scalar).
func crdObjectSchema(gvk schema.GroupVersionKind, s *apiextensionsv1.JSONSchemaProps) (*ObjectSchema, error) {
	internal := &apiextensions.JSONSchemaProps{}
	if err := apiextensionsv1.Convert_v1_JSONSchemaProps_To_apiextensions_JSONSchemaProps(s, internal, nil); err != nil {
		return nil, fmt.Errorf("convert the schema of %s: %w", gvk, err)
	}
	structural, err := structuralschema.NewStructural(internal)
	if err != nil {
		return nil, fmt.Errorf("the schema of %s is not structural: %w", gvk, err)
	}
	root := structural.ToKubeOpenAPI()
	tighten(root)
	addObjectProperties(root)
	name := "metacel.crd." + gvk.Group + "." + gvk.Version + "." + gvk.Kind
	types, err := schemaconv.ToSchemaFromOpenAPI(map[string]*spec.Schema{name: root}, false)
	if err != nil {
		return nil, fmt.Errorf("convert the schema of %s: %w", gvk, err)
	}
	_, meta := builtins()
	types.Types = mergeTypes(types.Types, meta)
	required, inlined := crdRequired(root, types, name)
	return &ObjectSchema{
		Kind: gvk.Kind, parser: typed.ParseableType{Schema: types, TypeRef: smdschema.TypeRef{NamedType: &name}},
		required: required, inlinedRequired: inlined,
	}, nil
}

// tighten rewrites, in place, what schemaconv would read looser than the API server validates:
// int-or-string becomes a scalar of either kind, a string with a format a plain string. It also
// gives embedded resources (x-kubernetes-embedded-resource) their apiVersion, kind and metadata.
func tighten(s *spec.Schema) {
	if s == nil {
		return
	}
	if b, _ := s.Extensions.GetBool("x-kubernetes-int-or-string"); b {
		s.Type, s.Format = spec.StringOrArray{"string"}, "int-or-string"
	} else if s.Type.Contains("string") && s.Format != "byte" {
		s.Format = ""
	}
	for k, p := range s.Properties {
		tighten(&p)
		s.Properties[k] = p
	}
	if s.Items != nil {
		tighten(s.Items.Schema)
	}
	if s.AdditionalProperties != nil {
		tighten(s.AdditionalProperties.Schema)
	}
	if b, _ := s.Extensions.GetBool("x-kubernetes-embedded-resource"); b {
		addObjectProperties(s)
	}
}

// addObjectProperties declares what every object has, whatever its schema says: apiVersion, kind
// and metadata, an ObjectMeta.
func addObjectProperties(s *spec.Schema) {
	s.SetProperty("apiVersion", *spec.StringProperty())
	s.SetProperty("kind", *spec.StringProperty())
	s.SetProperty("metadata", *spec.RefSchema("#/components/schemas/" + objectMetaType))
}

// closure returns the named types that a named type uses, itself included, in s.
func closure(s *smdschema.Schema, name string) []smdschema.TypeDef {
	seen := map[string]bool{}
	var out []smdschema.TypeDef
	var visitRef func(tr smdschema.TypeRef)
	var visitAtom func(a smdschema.Atom)
	visitRef = func(tr smdschema.TypeRef) {
		if tr.NamedType == nil {
			visitAtom(tr.Inlined)
			return
		}
		if seen[*tr.NamedType] {
			return
		}
		seen[*tr.NamedType] = true
		if def, ok := s.FindNamedType(*tr.NamedType); ok {
			out = append(out, def)
			visitAtom(def.Atom)
		}
	}
	visitAtom = func(a smdschema.Atom) {
		if a.Map != nil {
			for _, f := range a.Fields {
				visitRef(f.Type)
			}
			visitRef(a.Map.ElementType)
		}
		if a.List != nil {
			visitRef(a.List.ElementType)
		}
	}
	visitRef(smdschema.TypeRef{NamedType: &name})
	return out
}

// mergeTypes appends to types those of extra whose names it does not have.
func mergeTypes(types, extra []smdschema.TypeDef) []smdschema.TypeDef {
	have := make(map[string]bool, len(types))
	for _, t := range types {
		have[t.Name] = true
	}
	for _, t := range extra {
		if !have[t.Name] {
			types = append(types, t)
		}
	}
	return types
}
