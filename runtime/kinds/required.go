package kinds

import (
	_ "embed"
	"encoding/json"
	"slices"
	"sync"

	"k8s.io/kube-openapi/pkg/validation/spec"
	smdschema "sigs.k8s.io/structured-merge-diff/v6/schema"
)

// builtinRequiredJSON holds, by the name of a type of client-go's schema, the fields an object of
// a built-in kind must have for the API server to accept it: the `required` lists of the OpenAPI
// that Kubernetes publishes (api/openapi-spec/swagger.json of k8s.io/kubernetes, the version of
// the k8s.io/api in go.mod), less the few fields whose zero value the API server accepts, so that
// leaving them out is no error. TestTheRequiredFieldsAreKubernetes writes it again under
// METACEL_UPDATE_GOLDEN=1 (`make golden`). client-go's structured-merge-diff schema, which
// ObjectSchema.Fit checks first, carries no required fields.
//
//go:embed required.json
var builtinRequiredJSON []byte

var builtinRequired = sync.OnceValue(func() map[string][]string {
	var m map[string][]string
	if err := json.Unmarshal(builtinRequiredJSON, &m); err != nil {
		panic("kinds: required.json does not decode: " + err.Error())
	}
	return m
})

// Required returns the fields an object of the type tr refers to must have, as the API server
// checks them after defaulting: a field with a default is never missing. tr is a type reference
// of this schema as the walk of an object meets it (a field's type, a list's item type); none for
// a type without required fields, or a type of no schema.
func (s *ObjectSchema) Required(tr smdschema.TypeRef) []string {
	if tr.NamedType != nil {
		if s.required != nil {
			if r, ok := s.required[*tr.NamedType]; ok {
				return r
			}
		}
		return builtinRequired()[*tr.NamedType]
	}
	if tr.Inlined.Map == nil || s.inlinedRequired == nil {
		return nil
	}
	return s.inlinedRequired[tr.Inlined.Map]
}

// crdRequired records the required fields of a CRD's schema (root, converted by schemaconv into
// types, named rootName) by the types that schemaconv made of its objects: the root by its name,
// the objects inside it by their inlined map, which a field's TypeRef holds as it is.
func crdRequired(root *spec.Schema, types *smdschema.Schema, rootName string) (map[string][]string, map[*smdschema.Map][]string) {
	named := map[string][]string{}
	inlined := map[*smdschema.Map][]string{}
	if r := requiredOf(root); len(r) > 0 {
		named[rootName] = r
	}
	def, ok := types.FindNamedType(rootName)
	if ok {
		walkRequired(root, def.Atom, types, inlined)
	}
	return named, inlined
}

// walkRequired records the required fields of the objects below s, whose type is atom.
func walkRequired(s *spec.Schema, atom smdschema.Atom, types *smdschema.Schema, out map[*smdschema.Map][]string) {
	if s == nil {
		return
	}
	if atom.Map != nil {
		for name, p := range s.Properties {
			if name == "metadata" {
				continue // ObjectMeta: client-go's type, with no required fields
			}
			if f, ok := atom.FindField(name); ok {
				walkRequiredRef(&p, f.Type, types, out)
			}
		}
		if s.AdditionalProperties != nil && atom.Map.ElementType != (smdschema.TypeRef{}) {
			walkRequiredRef(s.AdditionalProperties.Schema, atom.Map.ElementType, types, out)
		}
	}
	if atom.List != nil && s.Items != nil {
		walkRequiredRef(s.Items.Schema, atom.List.ElementType, types, out)
	}
}

func walkRequiredRef(s *spec.Schema, tr smdschema.TypeRef, types *smdschema.Schema, out map[*smdschema.Map][]string) {
	if s == nil {
		return
	}
	if r := requiredOf(s); len(r) > 0 && tr.NamedType == nil && tr.Inlined.Map != nil {
		out[tr.Inlined.Map] = r
	}
	atom, ok := types.Resolve(tr)
	if !ok {
		return
	}
	walkRequired(s, atom, types, out)
}

// requiredOf returns the required fields of an object's schema that have no default: the API
// server defaults before it validates.
func requiredOf(s *spec.Schema) []string {
	var out []string
	for _, name := range s.Required {
		if p, ok := s.Properties[name]; ok && p.Default != nil {
			continue
		}
		out = append(out, name)
	}
	slices.Sort(out)
	return slices.Compact(out)
}
