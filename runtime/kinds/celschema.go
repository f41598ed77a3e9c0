package kinds

import (
	"k8s.io/apiserver/pkg/cel/common"
	smdschema "sigs.k8s.io/structured-merge-diff/v6/schema"
)

// CELSchema returns the schema as Kubernetes' CEL library reads one to type expressions
// (common.SchemaDeclType), read in place from the structured-merge-diff types, which it does not
// copy: for a built-in kind, whose schema client-go ships as structured-merge-diff only (a custom
// resource's CRD gives a better one, with its bounds and formats: use Info.Schema where it is
// known). Each field reads as its type: an object's properties, a list's items, a map's values, a
// string (a time too, as JSON holds it), an integer (client-go's schema says "numeric", and no
// built-in kind has a fraction: the API conventions forbid floats), a boolean. A value the schema leaves open (an int-or-string, a
// quantity, a RawExtension, or a type met again inside itself) is x-kubernetes-int-or-string,
// which CEL types as dyn; IntOrString says which of them holds an integer or a string.
func (s *ObjectSchema) CELSchema() common.Schema {
	return newCELSchema(s.parser.Schema, s.parser.TypeRef, nil)
}

// celSchema is one type of a structured-merge-diff schema as a common.Schema.
type celSchema struct {
	types *smdschema.Schema
	atom  smdschema.Atom
	// open is true for a value of any type
	open bool
	// name is the type's name, nil for an inlined type; outer is the type that holds it
	name  *string
	outer *celSchema
}

// timeTypes are the types client-go's schema leaves untyped that JSON always holds as strings.
var timeTypes = map[string]bool{
	"io.k8s.apimachinery.pkg.apis.meta.v1.Time":      true,
	"io.k8s.apimachinery.pkg.apis.meta.v1.MicroTime": true,
}

func newCELSchema(types *smdschema.Schema, tr smdschema.TypeRef, outer *celSchema) *celSchema {
	s := &celSchema{types: types, name: tr.NamedType, outer: outer}
	if tr.NamedType != nil && timeTypes[*tr.NamedType] {
		str := smdschema.String
		s.atom = smdschema.Atom{Scalar: &str}
		return s
	}
	atom, ok := types.Resolve(tr)
	kinds := 0
	for _, has := range []bool{atom.Scalar != nil, atom.List != nil, atom.Map != nil} {
		if has {
			kinds++
		}
	}
	s.atom = atom
	s.open = !ok || kinds != 1 || (atom.Scalar != nil && *atom.Scalar == smdschema.Untyped) || s.inside(tr.NamedType)
	return s
}

// inside reports whether a named type holds this one: a type met again inside itself is left
// open, not read for ever.
func (s *celSchema) inside(name *string) bool {
	if name == nil {
		return false
	}
	for o := s.outer; o != nil; o = o.outer {
		if o.name != nil && *o.name == *name {
			return true
		}
	}
	return false
}

func (s *celSchema) field(tr smdschema.TypeRef) *celSchema { return newCELSchema(s.types, tr, s) }

func (s *celSchema) Type() string {
	switch {
	case s.open:
		return ""
	case s.atom.List != nil:
		return "array"
	case s.atom.Map != nil:
		return "object"
	case *s.atom.Scalar == smdschema.String:
		return "string"
	case *s.atom.Scalar == smdschema.Numeric:
		return "integer"
	case *s.atom.Scalar == smdschema.Boolean:
		return "boolean"
	}
	return ""
}

func (s *celSchema) Items() common.Schema {
	if s.open || s.atom.List == nil {
		return nil
	}
	return s.field(s.atom.List.ElementType)
}

// Properties returns an object's fields; a map of one type of value (labels) has none, but
// AdditionalProperties.
func (s *celSchema) Properties() map[string]common.Schema {
	if s.open || s.atom.Map == nil || len(s.atom.Fields) == 0 {
		return nil
	}
	out := make(map[string]common.Schema, len(s.atom.Fields))
	for _, f := range s.atom.Fields {
		out[f.Name] = s.field(f.Type)
	}
	return out
}

func (s *celSchema) AdditionalProperties() common.SchemaOrBool {
	if s.open || s.atom.Map == nil || len(s.atom.Fields) > 0 || s.atom.Map.ElementType == (smdschema.TypeRef{}) {
		return nil
	}
	return celSchemaOrBool{s.field(s.atom.Map.ElementType)}
}

// IntOrString says what an open value that holds an integer or a string is: "quantity" (a
// resource.Quantity: "64Mi" or 1), "int-or-string" (an intstr.IntOrString: "http" or 80); "" for
// any other value, open or not (a RawExtension may hold anything).
func (s *celSchema) IntOrString() string {
	switch {
	case !s.open || s.name == nil:
		return ""
	case *s.name == QuantityType:
		return "quantity"
	case *s.name == IntOrStringType:
		return "int-or-string"
	}
	return ""
}

func (s *celSchema) IsXIntOrString() bool                  { return s.open }
func (s *celSchema) Format() string                        { return "" }
func (s *celSchema) Default() any                          { return nil }
func (s *celSchema) WithTypeAndObjectMeta() common.Schema  { return s }
func (s *celSchema) Pattern() string                       { return "" }
func (s *celSchema) Minimum() *float64                     { return nil }
func (s *celSchema) IsExclusiveMinimum() bool              { return false }
func (s *celSchema) Maximum() *float64                     { return nil }
func (s *celSchema) IsExclusiveMaximum() bool              { return false }
func (s *celSchema) MultipleOf() *float64                  { return nil }
func (s *celSchema) MinItems() *int64                      { return nil }
func (s *celSchema) MaxItems() *int64                      { return nil }
func (s *celSchema) MinLength() *int64                     { return nil }
func (s *celSchema) MaxLength() *int64                     { return nil }
func (s *celSchema) MinProperties() *int64                 { return nil }
func (s *celSchema) MaxProperties() *int64                 { return nil }
func (s *celSchema) Required() []string                    { return nil }
func (s *celSchema) Enum() []any                           { return nil }
func (s *celSchema) Nullable() bool                        { return false }
func (s *celSchema) UniqueItems() bool                     { return false }
func (s *celSchema) AllOf() []common.Schema                { return nil }
func (s *celSchema) OneOf() []common.Schema                { return nil }
func (s *celSchema) AnyOf() []common.Schema                { return nil }
func (s *celSchema) Not() common.Schema                    { return nil }
func (s *celSchema) IsXEmbeddedResource() bool             { return false }
func (s *celSchema) IsXPreserveUnknownFields() bool        { return false }
func (s *celSchema) XListType() string                     { return "" }
func (s *celSchema) XListMapKeys() []string                { return nil }
func (s *celSchema) XMapType() string                      { return "" }
func (s *celSchema) XValidations() []common.ValidationRule { return nil }

// celSchemaOrBool is a map's value type as a common.SchemaOrBool.
type celSchemaOrBool struct{ s *celSchema }

func (b celSchemaOrBool) Schema() common.Schema { return b.s }
func (b celSchemaOrBool) Allows() bool          { return true }
