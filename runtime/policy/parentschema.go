package policy

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sort"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"

	"metacel.dev/metacel/runtime/fieldpath"
	"metacel.dev/metacel/runtime/kinds"
	"metacel.dev/metacel/runtime/parentcrd"
)

// ParentCRD returns the CustomResourceDefinition that the policy's spec.parentSchema declares,
// as `metacel crd` prints it and the runtime installs it (package parentcrd builds it). Errors
// are an ErrorList at the declaration's lines, in file order. doc must have passed Validate.
func ParentCRD(doc *Document) (*apiextensionsv1.CustomResourceDefinition, error) {
	spec := doc.Policy.Spec
	ps := spec.ParentSchema
	if ps == nil {
		return nil, ErrorList{doc.Source.Errorf("spec", "declares no parentSchema: declare the parent's kind and fields "+
			"(spec.parentSchema: {kind: Website, spec: {...}}), or write its CRD by hand")}
	}
	crd, mistakes := parentcrd.Build(parentcrd.Declaration{
		APIVersion: spec.ParentResource.APIVersion,
		Names: apiextensionsv1.CustomResourceDefinitionNames{
			Plural: spec.ParentResource.Resource, Kind: ps.Kind, Singular: ps.Singular, ListKind: ps.ListKind, ShortNames: ps.ShortNames,
		},
		Scope:          ps.Scope,
		Description:    ps.Description,
		Spec:           ps.Spec,
		Status:         ps.Status,
		Rules:          validationRules(ps.Rules),
		PrinterColumns: printerColumns(ps.PrinterColumns),
		Versions:       otherVersions(ps.Versions),
		StorageVersion: ps.StorageVersion,
	})
	if len(mistakes) > 0 {
		return nil, atLines(doc.Source, mistakes)
	}
	return crd, nil
}

// ParentDeclaration is the policy reduced to what its parent's CRD and the conversions between the
// parent's versions are made from: its name, spec.parentResource's apiVersion and resource, and
// spec.parentSchema, as a policy document in JSON. ReadParentDeclaration reads it back as a policy
// whose ParentCRD and CompileConversion are doc's, so that the CRD the runtime installs can carry
// what converts its parents (contract.AnnotationParentDeclaration) whatever the policy's source
// holds since. doc must have passed Validate.
func ParentDeclaration(doc *Document) ([]byte, error) {
	spec := doc.Policy.Spec
	var out bytes.Buffer
	enc := json.NewEncoder(&out)
	enc.SetEscapeHTML(false) // CEL's <, > and && as they are written
	err := enc.Encode(CompositePolicy{APIVersion: APIVersion, Kind: Kind, Metadata: ObjectMeta{Name: doc.Policy.Metadata.Name},
		Spec: Spec{ParentResource: ParentResource{APIVersion: spec.ParentResource.APIVersion, Resource: spec.ParentResource.Resource},
			ParentSchema: spec.ParentSchema}})
	if err != nil {
		return nil, fmt.Errorf("encode the parent's declaration of policy %q: %w", doc.Policy.Metadata.Name, err)
	}
	return bytes.TrimSuffix(out.Bytes(), []byte("\n")), nil
}

// ReadParentDeclaration reads a ParentDeclaration back, validated; origin names it in errors.
func ReadParentDeclaration(origin string, data []byte) (*Document, error) {
	docs, err := Parse(origin, data)
	if err != nil {
		return nil, err
	}
	if len(docs) != 1 || docs[0].Policy.Spec.ParentSchema == nil {
		return nil, fmt.Errorf("%s: want one policy with a parentSchema, got %d policies", origin, len(docs))
	}
	if err := Validate(docs[0]); err != nil {
		return nil, err
	}
	return docs[0], nil
}

// otherVersions declares the parent's other versions, each at its field path.
func otherVersions(versions []ParentVersion) []parentcrd.Version {
	out := make([]parentcrd.Version, len(versions))
	for i, v := range versions {
		out[i] = parentcrd.Version{
			Name: v.Name, Path: fieldpath.Index("spec.parentSchema.versions", i),
			Served: v.IsServed(), Deprecated: v.Deprecated, DeprecationWarning: v.DeprecationWarning,
			Spec: v.Spec, Status: v.Status, Rules: validationRules(v.Rules), PrinterColumns: printerColumns(v.PrinterColumns),
		}
	}
	return out
}

func validationRules(rules []ValidationRule) []apiextensionsv1.ValidationRule {
	out := make([]apiextensionsv1.ValidationRule, len(rules))
	for i, r := range rules {
		out[i] = apiextensionsv1.ValidationRule{Rule: r.Rule, Message: r.Message}
	}
	return out
}

func printerColumns(columns []PrinterColumn) []apiextensionsv1.CustomResourceColumnDefinition {
	out := make([]apiextensionsv1.CustomResourceColumnDefinition, len(columns))
	for i, c := range columns {
		out[i] = apiextensionsv1.CustomResourceColumnDefinition{Name: c.Name, Type: c.Type, JSONPath: c.JSONPath, Description: c.Description, Priority: c.Priority}
	}
	return out
}

// atLines places the mistakes of a declaration at the lines of their field paths, in file order.
func atLines(src *Source, mistakes []parentcrd.Error) ErrorList {
	errs := make(ErrorList, len(mistakes))
	for i, m := range mistakes {
		errs[i] = src.Errorf(m.Path, "%s", m.Msg)
	}
	sort.SliceStable(errs, func(i, j int) bool { return errs[i].Line < errs[j].Line })
	return errs
}

// declaredParent returns the parent resource as the policy's spec.parentSchema declares it, for a
// parent the mapper does not know (known.Guessed): its kind, scope, schema and status subresource
// from the declaration, so that expressions are typed against it. It stays Guessed, since nothing
// serves it yet: in a cluster the policy still waits for the CRD. A parent the mapper knows keeps
// what the mapper says: a CRD given with --crd, or installed in the cluster, wins over the
// declaration. The declared CRD (nil without parentSchema) and its errors are returned either way.
func declaredParent(doc *Document, known kinds.Info) (kinds.Info, *apiextensionsv1.CustomResourceDefinition, error) {
	if doc.Policy.Spec.ParentSchema == nil {
		return known, nil, nil
	}
	crd, err := ParentCRD(doc)
	if err != nil || !known.Guessed {
		return known, crd, err
	}
	return kinds.Info{
		GVR:        known.GVR,
		Kind:       crd.Spec.Names.Kind,
		Namespaced: crd.Spec.Scope == apiextensionsv1.NamespaceScoped,
		Schema:     crd.Spec.Versions[0].Schema.OpenAPIV3Schema,
		HasStatus:  true,
		Guessed:    true,
	}, crd, nil
}
