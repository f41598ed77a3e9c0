package expr

import (
	"context"
	"strings"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"sigs.k8s.io/yaml"
)

// gadgetType is the type of a custom kind's objects, from its CRD's schema.
func gadgetType(t *testing.T) *ObjectType {
	t.Helper()
	s := &apiextensionsv1.JSONSchemaProps{}
	if err := yaml.Unmarshal([]byte(`
type: object
properties:
  spec:
    type: object
    properties:
      replicas: {type: integer}
      port: {x-kubernetes-int-or-string: true}
      free: {type: object, x-kubernetes-preserve-unknown-fields: true}
  status:
    type: object
    properties:
      readyReplicas: {type: integer}
`), s); err != nil {
		t.Fatal(err)
	}
	gadget, err := NewObjectType("metacel.kind.example.com.v1.Gadget", s)
	if err != nil {
		t.Fatal(err)
	}
	return gadget
}

func TestChildrenAndChildAreTypedByTheirKind(t *testing.T) {
	gadget := gadgetType(t)
	typed := mustEnv(t, Scope{
		Children:  map[string]ObjectID{"gadget": {Type: gadget}, "gadgets": {Type: gadget, List: true}, "made": {List: true}, "other": {}},
		Variables: []Var{},
		Child:     true, ChildType: gadget,
	})
	untyped := mustEnv(t, Scope{Child: true})
	tests := []struct {
		name string
		env  *Env
		expr string
		want string // "" when it compiles
	}{
		{"child has its kind's fields", typed, "child.spec.replicas > 0 && child.?status.?readyReplicas.orValue(0) > 0", ""},
		{"a misspelt field of child says which it likely is", typed, "child.?status.?readyReplica.orValue(0) > 0",
			`undefined field 'readyReplica' (did you mean "readyReplicas"?)`},
		{"a misspelt field of children.<id> says which it likely is", typed, "children.gadget.spec.replica",
			`undefined field 'replica' (did you mean "replicas"?)`},
		{"an item of a list id has its kind's fields", typed, "children.gadgets.map(g, g.spec.replcas)",
			`undefined field 'replcas' (did you mean "replicas"?)`},
		{"metadata is typed", typed, "children.gadget.metadata.nmae", `undefined field 'nmae' (did you mean "name"?)`},
		{"open fields stay open", typed, "child.spec.port == 'http' || child.spec.port == 80 || child.spec.free.a.b == 1", ""},
		{"a field's type is checked", typed, "child.spec.replicas == 'three'", "no matching overload"},
		{"a list id of no known kind is a list of dyn", typed, "children.made.map(m, m.any.field)", ""},
		{"an id of no known kind is dyn", typed, "children.other.any.field", ""},
		{"child of no known kind is dyn", untyped, "child.any.field", ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := tc.env.Compile(tc.expr, WantAny)
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("want it to compile, got %v", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Fatalf("got %v\nwant it to contain %s", err, tc.want)
			}
		})
	}
}

// TestTypedChildrenEvaluateOverPlainMaps: only the checker sees the types; the values are the
// objects as read, plain maps.
func TestTypedChildrenEvaluateOverPlainMaps(t *testing.T) {
	gadget := gadgetType(t)
	env := mustEnv(t, Scope{Children: map[string]ObjectID{"gadget": {Type: gadget}}, Child: true, ChildType: gadget})
	p, err := env.Compile("child.?status.?readyReplicas.orValue(0) >= child.spec.replicas && children.gadget.spec.free.x == 'y'", WantBool)
	if err != nil {
		t.Fatal(err)
	}
	obj := map[string]any{
		"apiVersion": "example.com/v1", "kind": "Gadget", "metadata": map[string]any{"name": "g"},
		"spec":   map[string]any{"replicas": int64(2), "free": map[string]any{"x": "y"}},
		"status": map[string]any{"readyReplicas": int64(2)},
	}
	ok, err := p.EvalBool(context.Background(), NewActivation(map[string]any{"child": obj, "children": map[string]any{"gadget": obj}}), NewBudget())
	if err != nil || !ok {
		t.Fatalf("got %v, %v; want true", ok, err)
	}
}

func TestRelatedAreTypedByTheirKind(t *testing.T) {
	gadget := gadgetType(t)
	env := mustEnv(t, Scope{Related: map[string]ObjectID{"gadget": {Type: gadget}, "gadgets": {Type: gadget, List: true}, "other": {}}})
	tests := []struct {
		name string
		expr string
		want string // "" when it compiles
	}{
		{"a related object has its kind's fields", "related.gadget.spec.replicas > 0 && related.gadgets.all(g, g.spec.replicas > 0)", ""},
		{"a misspelt field of a related object says which it likely is", "related.gadget.spec.replica",
			`undefined field 'replica' (did you mean "replicas"?)`},
		{"a related list is a list of its kind", "related.gadgets.map(g, g.spec.replcas)", `undefined field 'replcas' (did you mean "replicas"?)`},
		{"a related object of no known kind is dyn", "related.other.any.field", ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := env.Compile(tc.expr, WantAny)
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("want it to compile, got %v", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Fatalf("got %v\nwant it to contain %s", err, tc.want)
			}
		})
	}
}

func TestAnExpressionTypedDynSaysWhatMayMakeItAString(t *testing.T) {
	gadget := gadgetType(t)
	env := mustEnv(t, Scope{
		Related:  map[string]ObjectID{"gadget": {Type: gadget}},
		Children: map[string]ObjectID{"gadgets": {Type: gadget, List: true}, "other": {}},
	})
	tests := []struct {
		name string
		expr string
		want string // StringSource.String(), "" for none
	}{
		{"an int-or-string field", "related.gadget.spec.port", "it is an int-or-string, a number or a string"},
		{"an int-or-string read through optionals", "related.?gadget.?spec.?port.orValue(80)", "it is an int-or-string, a number or a string"},
		{"an int-or-string read through optionals with a string default", "related.?gadget.?spec.?port.orValue('http')",
			"related.?gadget.?spec.?port is an int-or-string, a number or a string"},
		{"an item of a list of a kind", "children.gadgets[0].spec.port", "it is an int-or-string, a number or a string"},
		{"a string default", "children.other.?size.orValue('1Gi')", `"1Gi" is a string`},
		{"a string branch", "has(children.other.x) ? children.other.x : 'none'", `"none" is a string`},
		{"a field that keeps unknown fields may hold anything", "related.gadget.spec.free.size", ""},
		{"a value of no known kind", "children.other.size", ""},
		{"a number default", "children.other.?size.orValue(0)", ""},
		{"a value passed through dyn()", "dyn(related.gadget.spec.port)", ""},
		{"an expression with a type of its own", "related.gadget.spec.replicas", ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p, err := env.Compile(tc.expr, WantAny)
			if err != nil {
				t.Fatal(err)
			}
			got := ""
			if s := p.MayGiveString(); s != nil {
				got = s.String()
			}
			if got != tc.want {
				t.Fatalf("got %q, want %q", got, tc.want)
			}
		})
	}
}
