package expr

import (
	"fmt"
	"maps"
	"sync"

	"github.com/google/cel-go/common/types"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	structuralschema "k8s.io/apiextensions-apiserver/pkg/apiserver/schema"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema/cel/model"
	apiservercel "k8s.io/apiserver/pkg/cel"
	"k8s.io/apiserver/pkg/cel/common"
)

// ObjectType is the CEL type of the objects of one kind (a child's), typed from its OpenAPI schema
// as the parent is (schemaType), with every object type nested in it by name. It is built once
// and shared by every environment that declares it, which does not walk its nested types again
// (a Deployment has hundreds, each environment is built twice, and a policy has an environment
// per variable). It is immutable and safe for concurrent use.
type ObjectType struct {
	decl   *apiservercel.DeclType
	nested map[string]*apiservercel.DeclType
}

// NewObjectType types the objects of a kind from a custom resource's OpenAPI schema (its CRD's).
// name names the type, and each kind's must differ from the others'
// (metacel.kind.example.com.v1.Gadget).
func NewObjectType(name string, s *apiextensionsv1.JSONSchemaProps) (*ObjectType, error) {
	t, err := schemaType(name, s)
	if err != nil {
		return nil, err
	}
	return newObjectType(name, t)
}

// NewObjectTypeOf types the objects of a kind from its schema as Kubernetes' CEL library reads one
// (a built-in kind's: kinds.ObjectSchema.CELSchema), with apiVersion, kind and metadata typed as
// the parent's are; name as for NewObjectType.
func NewObjectTypeOf(name string, s common.Schema) (*ObjectType, error) {
	meta, err := objectMetaCEL()
	if err != nil {
		return nil, err
	}
	root := objectRoot{Schema: s, meta: meta}
	t := common.SchemaDeclType(root, false)
	if t == nil {
		return nil, fmt.Errorf("schema has no type CEL can use")
	}
	markSchema(root, t)
	return newObjectType(name, t.MaybeAssignTypeName(name))
}

func newObjectType(name string, t *apiservercel.DeclType) (*ObjectType, error) {
	if !t.IsObject() {
		return nil, fmt.Errorf("schema is not an object's")
	}
	return &ObjectType{decl: t, nested: apiservercel.FieldTypeMap(name, t)}, nil
}

// objectRoot is the schema of a kind's objects with the fields every object has, apiVersion, kind
// and metadata (objectMetaSchema), declared as the parent's are.
type objectRoot struct {
	common.Schema
	meta common.Schema
}

func (r objectRoot) Type() string { return "object" }

func (r objectRoot) Properties() map[string]common.Schema {
	props := maps.Clone(r.Schema.Properties())
	if props == nil {
		props = map[string]common.Schema{}
	}
	str := &model.Structural{Structural: &structuralschema.Structural{Generic: structuralschema.Generic{Type: "string"}}}
	props["apiVersion"], props["kind"], props["metadata"] = str, str, r.meta
	return props
}

// objectMetaCEL is objectMetaSchema as Kubernetes' CEL library reads it, built once.
var objectMetaCEL = sync.OnceValues(func() (common.Schema, error) {
	meta := objectMetaSchema()
	loosen(&meta)
	s, err := structuralOf(&meta)
	if err != nil {
		return nil, fmt.Errorf("ObjectMeta: %w", err)
	}
	return &model.Structural{Structural: s}, nil
})

// declType returns the type, nil meaning dyn.
func (t *ObjectType) declType() *apiservercel.DeclType {
	if t == nil {
		return apiservercel.DynType
	}
	return t.decl
}

// typeProvider gives cel-go the object types of one scope as apiservercel's DeclTypeProvider does
// (a field is found under its escaped name too: a keyword, __namespace__, or the name an
// expression's selection was unescaped to, a-b for a__dash__b, escaped.go; a map type gives its
// values' type for any field), from sets of types by name walked beforehand: the scope's own, and each
// kind's (ObjectType.nested). Every other type comes from the base environment's provider.
type typeProvider struct {
	types.Provider
	sets []map[string]*apiservercel.DeclType
}

// FindDeclType returns the declared type of a name.
func (p *typeProvider) FindDeclType(name string) (*apiservercel.DeclType, bool) {
	if p == nil {
		return nil, false
	}
	for _, set := range p.sets {
		if t, ok := set[name]; ok {
			return t, true
		}
	}
	return nil, false
}

// FindStructType implements types.Provider.
func (p *typeProvider) FindStructType(name string) (*types.Type, bool) {
	if t, ok := p.FindDeclType(name); ok {
		return types.NewTypeTypeWithParam(t.CelType()), true
	}
	return p.Provider.FindStructType(name)
}

// FindStructFieldNames implements types.Provider; as DeclTypeProvider, it lists no declared type's.
func (p *typeProvider) FindStructFieldNames(name string) ([]string, bool) {
	if _, ok := p.FindDeclType(name); ok {
		return nil, false
	}
	return p.Provider.FindStructFieldNames(name)
}

// FindStructFieldType implements types.Provider.
func (p *typeProvider) FindStructFieldType(name, field string) (*types.FieldType, bool) {
	t, ok := p.FindDeclType(name)
	if !ok {
		return p.Provider.FindStructFieldType(name, field)
	}
	f, ok := t.Fields[field]
	if !ok { // a keyword (namespace), or a name an expression's selection was unescaped to (a-b)
		if escaped, canEscape := apiservercel.Escape(field); canEscape {
			f, ok = t.Fields[escaped]
		}
	}
	switch {
	case ok:
		return &types.FieldType{Type: f.Type.CelType()}, true
	case t.IsMap():
		return &types.FieldType{Type: t.ElemType.CelType()}, true
	}
	return nil, false
}

// scopeTypes returns the object types a scope declares, by name: those of its roots and the types
// nested in them, walked here (the parent's, variables': small); the objects that are no more than
// their fields (children and related, whose fields are kinds'); and those of the kinds (walked
// once, in their ObjectType).
func scopeTypes(roots, flat []*apiservercel.DeclType, kinds []*ObjectType) []map[string]*apiservercel.DeclType {
	own := map[string]*apiservercel.DeclType{}
	for _, r := range roots {
		for name, t := range apiservercel.FieldTypeMap(r.TypeName(), r) {
			own[name] = t
		}
	}
	for _, t := range flat {
		own[t.TypeName()] = t
	}
	sets := []map[string]*apiservercel.DeclType{own}
	seen := map[*ObjectType]bool{}
	for _, k := range kinds {
		if k != nil && !seen[k] {
			seen[k] = true
			sets = append(sets, k.nested)
		}
	}
	return sets
}
