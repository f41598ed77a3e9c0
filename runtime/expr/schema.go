package expr

import (
	"fmt"

	"k8s.io/apiextensions-apiserver/pkg/apis/apiextensions"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	structuralschema "k8s.io/apiextensions-apiserver/pkg/apiserver/schema"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema/cel/model"
	apiservercel "k8s.io/apiserver/pkg/cel"
)

// ParentType types `parent` from a custom resource's OpenAPI schema, so that a misspelt field is a
// compile error; see schemaType for how the schema is read.
func ParentType(s *apiextensionsv1.JSONSchemaProps) (*apiservercel.DeclType, error) {
	return schemaType("metacel.parent", s)
}

// schemaType types the objects of an OpenAPI schema, named name. The schema is adjusted to how
// metacel evaluates: metadata is a full ObjectMeta; string formats (date-time, duration, byte)
// stay strings, because values are plain JSON at run time; an object that keeps unknown fields
// and declares none is a map of dyn. Its int-or-string fields are dyn too, marked as such
// (markProps).
func schemaType(name string, s *apiextensionsv1.JSONSchemaProps) (*apiservercel.DeclType, error) {
	root := s.DeepCopy()
	if root.Properties == nil {
		root.Properties = map[string]apiextensionsv1.JSONSchemaProps{}
	}
	root.Properties["apiVersion"] = apiextensionsv1.JSONSchemaProps{Type: "string"}
	root.Properties["kind"] = apiextensionsv1.JSONSchemaProps{Type: "string"}
	root.Properties["metadata"] = objectMetaSchema()
	loosen(root)
	structural, err := structuralOf(root)
	if err != nil {
		return nil, err
	}
	t := model.SchemaDeclType(structural, false)
	if t == nil {
		return nil, fmt.Errorf("schema has no type CEL can use")
	}
	markProps(s, t)
	return t.MaybeAssignTypeName(name), nil
}

// structuralOf returns the structural form of an OpenAPI schema, which Kubernetes' CEL library reads.
func structuralOf(s *apiextensionsv1.JSONSchemaProps) (*structuralschema.Structural, error) {
	internal := &apiextensions.JSONSchemaProps{}
	if err := apiextensionsv1.Convert_v1_JSONSchemaProps_To_apiextensions_JSONSchemaProps(s, internal, nil); err != nil {
		return nil, fmt.Errorf("convert schema: %w", err)
	}
	structural, err := structuralschema.NewStructural(internal)
	if err != nil {
		return nil, fmt.Errorf("schema is not structural: %w", err)
	}
	return structural, nil
}

// loosen rewrites a schema, in place, to the values metacel's CEL sees.
func loosen(s *apiextensionsv1.JSONSchemaProps) {
	if s.Type == "string" {
		s.Format = ""
	}
	if s.XPreserveUnknownFields != nil && *s.XPreserveUnknownFields && len(s.Properties) == 0 && s.AdditionalProperties == nil {
		s.Type = "object"
		s.AdditionalProperties = &apiextensionsv1.JSONSchemaPropsOrBool{Allows: true, Schema: &apiextensionsv1.JSONSchemaProps{XIntOrString: true}}
		return
	}
	for k, p := range s.Properties {
		loosen(&p)
		s.Properties[k] = p
	}
	if s.Items != nil && s.Items.Schema != nil {
		loosen(s.Items.Schema)
	}
	if s.AdditionalProperties != nil && s.AdditionalProperties.Schema != nil {
		loosen(s.AdditionalProperties.Schema)
	}
}

// objectMetaSchema is ObjectMeta, with the bounds the API server enforces, so that the cost
// estimate knows a name is short.
func objectMetaSchema() apiextensionsv1.JSONSchemaProps {
	str := func(maxLength int64) apiextensionsv1.JSONSchemaProps {
		return apiextensionsv1.JSONSchemaProps{Type: "string", MaxLength: &maxLength}
	}
	strMap := func(maxValue int64) apiextensionsv1.JSONSchemaProps {
		v := str(maxValue)
		return apiextensionsv1.JSONSchemaProps{Type: "object", AdditionalProperties: &apiextensionsv1.JSONSchemaPropsOrBool{Allows: true, Schema: &v}}
	}
	const (
		dnsSubdomain  = 253 // names
		dnsLabel      = 63  // namespaces, label values
		qualifiedName = 317 // prefix/name: finalizers, kinds
		timestamp     = 64
		fieldManager  = 128
		annotations   = 256 * 1024 // all annotations of an object together
	)
	boolean := apiextensionsv1.JSONSchemaProps{Type: "boolean"}
	return apiextensionsv1.JSONSchemaProps{
		Type: "object",
		Properties: map[string]apiextensionsv1.JSONSchemaProps{
			"name": str(dnsSubdomain), "generateName": str(dnsSubdomain), "namespace": str(dnsLabel),
			"uid": str(timestamp), "resourceVersion": str(timestamp),
			"generation":        {Type: "integer", Format: "int64"},
			"creationTimestamp": str(timestamp), "deletionTimestamp": str(timestamp),
			"labels": strMap(dnsLabel), "annotations": strMap(annotations),
			"finalizers": {Type: "array", Items: &apiextensionsv1.JSONSchemaPropsOrArray{Schema: ptr(str(qualifiedName))}},
			"ownerReferences": {Type: "array", Items: &apiextensionsv1.JSONSchemaPropsOrArray{Schema: &apiextensionsv1.JSONSchemaProps{
				Type: "object",
				Properties: map[string]apiextensionsv1.JSONSchemaProps{
					"apiVersion": str(qualifiedName), "kind": str(qualifiedName), "name": str(dnsSubdomain), "uid": str(timestamp),
					"controller": boolean, "blockOwnerDeletion": boolean,
				},
			}}},
			"managedFields": {Type: "array", Items: &apiextensionsv1.JSONSchemaPropsOrArray{Schema: &apiextensionsv1.JSONSchemaProps{
				Type: "object",
				Properties: map[string]apiextensionsv1.JSONSchemaProps{
					"manager": str(fieldManager), "operation": str(timestamp), "apiVersion": str(qualifiedName),
					"time": str(timestamp), "fieldsType": str(timestamp), "subresource": str(qualifiedName),
					"fieldsV1": {Type: "object", XPreserveUnknownFields: ptr(true)},
				},
			}}},
			"deletionGracePeriodSeconds": {Type: "integer", Format: "int64"},
			"selfLink":                   {Type: "string"},
		},
	}
}

func ptr[T any](v T) *T { return &v }
