package kinds

import (
	"reflect"
	"testing"

	"github.com/google/cel-go/cel"
	"k8s.io/apimachinery/pkg/runtime/schema"
	apiservercel "k8s.io/apiserver/pkg/cel"
	"k8s.io/apiserver/pkg/cel/common"
	"k8s.io/client-go/kubernetes/scheme"
	smdschema "sigs.k8s.io/structured-merge-diff/v6/schema"
	"sigs.k8s.io/structured-merge-diff/v6/typed"
)

// fieldType follows a path of field names (@items for a list's items, @values for a map's) in a
// declared type; nil when the path does not exist.
func fieldType(t *apiservercel.DeclType, path ...string) *apiservercel.DeclType {
	for _, name := range path {
		switch {
		case t == nil:
			return nil
		case name == "@items" || name == "@values":
			t = t.ElemType
		default:
			f, ok := t.Fields[name]
			if !ok {
				return nil
			}
			t = f.Type
		}
	}
	return t
}

func TestCELSchemaTypesABuiltinKind(t *testing.T) {
	info := LookupResource(NewCatalog(), schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"})
	s, err := SchemaOf(info)
	if err != nil || s == nil {
		t.Fatalf("schema of Deployment: %v", err)
	}
	deployment := common.SchemaDeclType(s.CELSchema(), false)
	if deployment == nil {
		t.Fatal("no CEL type for Deployment")
	}
	tests := []struct {
		name string
		path []string
		want *cel.Type // nil: the path does not exist
	}{
		{"a number is an integer", []string{"spec", "replicas"}, cel.IntType},
		{"a string is a string", []string{"spec", "template", "spec", "containers", "@items", "image"}, cel.StringType},
		{"a boolean is a boolean", []string{"spec", "paused"}, cel.BoolType},
		{"a time is a string, as JSON holds it", []string{"status", "conditions", "@items", "lastTransitionTime"}, cel.StringType},
		{"a map of strings (labels)", []string{"spec", "template", "metadata", "labels"}, cel.MapType(cel.StringType, cel.StringType)},
		{"an int-or-string is dyn", []string{"spec", "strategy", "rollingUpdate", "maxSurge"}, cel.DynType},
		{"a quantity is dyn", []string{"spec", "template", "spec", "containers", "@items", "resources", "limits", "@values"}, cel.DynType},
		{"a field the kind does not have is none", []string{"spec", "replica"}, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := fieldType(deployment, tc.path...)
			switch {
			case tc.want == nil && got != nil:
				t.Fatalf("%v: got %v, want no field", tc.path, got.CelType())
			case tc.want != nil && (got == nil || !got.CelType().IsExactType(tc.want)):
				t.Fatalf("%v: got %v, want %v", tc.path, got, tc.want)
			}
		})
	}
}

// schemaAt follows a path of field names (@items, @values as fieldType) in a schema; nil when the
// path does not exist.
func schemaAt(s common.Schema, path ...string) common.Schema {
	for _, name := range path {
		switch {
		case s == nil:
			return nil
		case name == "@items":
			s = s.Items()
		case name == "@values":
			ap := s.AdditionalProperties()
			if ap == nil {
				return nil
			}
			s = ap.Schema()
		default:
			s = s.Properties()[name]
		}
	}
	return s
}

func TestCELSchemaSaysWhichOpenValuesHoldAnIntegerOrAString(t *testing.T) {
	builtin := func(gvr schema.GroupVersionResource) common.Schema {
		s, err := SchemaOf(LookupResource(NewCatalog(), gvr))
		if err != nil || s == nil {
			t.Fatalf("schema of %s: %v", gvr, err)
		}
		return s.CELSchema()
	}
	deployment := builtin(schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"})
	revision := builtin(schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "controllerrevisions"})
	tests := []struct {
		name string
		s    common.Schema
		path []string
		want string
	}{
		{"a quantity", deployment, []string{"spec", "template", "spec", "containers", "@items", "resources", "limits", "@values"}, "quantity"},
		{"an int-or-string", deployment, []string{"spec", "strategy", "rollingUpdate", "maxSurge"}, "int-or-string"},
		{"a RawExtension holds any value", revision, []string{"data"}, ""},
		{"a string is no open value", deployment, []string{"spec", "template", "spec", "containers", "@items", "image"}, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s, ok := schemaAt(tc.s, tc.path...).(interface{ IntOrString() string })
			if !ok {
				t.Fatalf("%v: no schema that says what it holds", tc.path)
			}
			if got := s.IntOrString(); got != tc.want {
				t.Fatalf("%v: got %q, want %q", tc.path, got, tc.want)
			}
		})
	}
}

// TestCELSchemaLeavesATypeInsideItselfOpen: a type met again inside itself (a tree of nodes) is
// dyn there, not read for ever.
func TestCELSchemaLeavesATypeInsideItselfOpen(t *testing.T) {
	node, str := "node", "str"
	types := &smdschema.Schema{Types: []smdschema.TypeDef{
		{Name: node, Atom: smdschema.Atom{Map: &smdschema.Map{Fields: []smdschema.StructField{
			{Name: "name", Type: smdschema.TypeRef{NamedType: &str}},
			{Name: "children", Type: smdschema.TypeRef{Inlined: smdschema.Atom{List: &smdschema.List{ElementType: smdschema.TypeRef{NamedType: &node}}}}},
		}}}},
		{Name: str, Atom: smdschema.Atom{Scalar: ptrTo(smdschema.String)}},
	}}
	s := &ObjectSchema{Kind: "Node", parser: typed.ParseableType{Schema: types, TypeRef: smdschema.TypeRef{NamedType: &node}}}
	tree := common.SchemaDeclType(s.CELSchema(), false)
	if got := fieldType(tree, "name"); got == nil || !got.CelType().IsExactType(cel.StringType) {
		t.Fatalf("name: got %v, want string", got)
	}
	if got := fieldType(tree, "children", "@items"); got == nil || !got.CelType().IsExactType(cel.DynType) {
		t.Fatalf("a node inside a node: got %v, want dyn", got)
	}
}

// TestNoBuiltinKindHasAFraction: CELSchema types client-go's "numeric" as an integer, which holds
// while no built-in type has a float field (the API conventions forbid them).
func TestNoBuiltinKindHasAFraction(t *testing.T) {
	seen := map[reflect.Type]bool{}
	var walk func(tp reflect.Type, path string)
	walk = func(tp reflect.Type, path string) {
		if seen[tp] {
			return
		}
		seen[tp] = true
		switch tp.Kind() {
		case reflect.Float32, reflect.Float64:
			t.Errorf("%s is a %s: type client-go's numeric as double (or dyn) there", path, tp)
		case reflect.Pointer, reflect.Slice, reflect.Array, reflect.Map:
			walk(tp.Elem(), path+"[]")
		case reflect.Struct:
			for i := range tp.NumField() {
				walk(tp.Field(i).Type, path+"."+tp.Field(i).Name)
			}
		}
	}
	for gvk, tp := range scheme.Scheme.AllKnownTypes() {
		walk(tp, gvk.String())
	}
	if len(seen) < 500 {
		t.Fatalf("walked %d types only", len(seen))
	}
}

func ptrTo[T any](v T) *T { return &v }
