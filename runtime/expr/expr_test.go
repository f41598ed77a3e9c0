package expr

import (
	"strings"
	"testing"

	"github.com/google/cel-go/cel"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apiservercel "k8s.io/apiserver/pkg/cel"
	"sigs.k8s.io/yaml"
)

var parent = map[string]any{
	"apiVersion": "demo.rtfm.co.ua/v1",
	"kind":       "MyApp",
	"metadata":   map[string]any{"name": "app", "namespace": "default", "labels": map[string]any{"team": "a"}},
	"spec":       map[string]any{"image": "nginx", "size": int64(3), "items": []any{"a", "b"}},
}

func mustEnv(t testing.TB, s Scope) *Env {
	t.Helper()
	env, err := NewEnv(s)
	if err != nil {
		t.Fatal(err)
	}
	return env
}

// evalCase is an expression and the native value it evaluates to.
type evalCase struct {
	name string
	expr string
	want any
}

func evaluateCases(t *testing.T, env *Env, act Activation, tests []evalCase) {
	t.Helper()
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p, err := env.Compile(tc.expr, WantAny)
			if err != nil {
				t.Fatal(err)
			}
			v, err := p.Eval(t.Context(), act, NewBudget())
			if err != nil {
				t.Fatal(err)
			}
			got, err := toNative(v)
			if err != nil {
				t.Fatal(err)
			}
			if !equality.Semantic.DeepEqual(got, tc.want) {
				t.Errorf("got %#v, want %#v", got, tc.want)
			}
		})
	}
}

func TestEvaluate(t *testing.T) {
	env := mustEnv(t, Scope{Variables: []Var{{Name: "n", Type: cel.IntType}}})
	act := NewActivation(map[string]any{"parent": parent, "variables": map[string]any{"n": int64(2)}})
	tests := []evalCase{
		{"string concatenation", "parent.metadata.name + '-pod'", "app-pod"},
		{"integer arithmetic on decoded ints", "parent.spec.size + 1", int64(4)},
		{"object literal of mixed types", "{'name': 'x', 'port': 80, 'on': true}", map[string]any{"name": "x", "port": int64(80), "on": true}},
		{"optional absent converts to nil", "parent.spec.?banner", nil},
		{"optional present", "parent.spec.?image.orValue('none')", "nginx"},
		{"map merge overrides with the argument", "parent.metadata.labels.merge({'app': 'x', 'team': 'b'})", map[string]any{"team": "b", "app": "x"}},
		{"sha256 is hex", "hash.sha256('abc').substring(0, 8)", "ba7816bf"},
		{"fnv64a has 16 hex digits", "hash.fnv64a('abc')", "e71fa2190541574b"},
		{"json.encode sorts keys", "json.encode({'b': 1, 'a': [true, null]})", `{"a":[true,null],"b":1}`},
		{"yaml.encode", "yaml.encode({'a': 'x'})", "a: x\n"},
		{"quantity to string", "string(quantity('1536Mi').add(quantity('512Mi')))", "2Gi"},
		{"kubernetes list library", "[3, 1, 2].sum()", int64(6)},
		{"lists extension", "lists.range(3)", []any{int64(0), int64(1), int64(2)}},
		// sorted: a map is iterated in no particular order
		{"two-variable comprehension", "{'a': 1, 'b': 2}.transformList(k, v, k + string(v)).sort()", []any{"a1", "b2"}},
		{"variables", "variables.n * 10", int64(20)},
		{"strings extension", "'a,b'.split(',')", []any{"a", "b"}},
		{"format library", "!format.dns1123Label().validate('ok').hasValue()", true},
	}
	evaluateCases(t, env, act, tests)
}

// parentType types parent from a CRD schema written in YAML.
func parentType(t *testing.T, schema string) *apiservercel.DeclType {
	t.Helper()
	crd := &apiextensionsv1.JSONSchemaProps{}
	if err := yaml.Unmarshal([]byte(schema), crd); err != nil {
		t.Fatal(err)
	}
	typed, err := ParentType(crd)
	if err != nil {
		t.Fatal(err)
	}
	return typed
}

func TestCompileErrors(t *testing.T) {
	typed := parentType(t, `
type: object
properties:
  spec:
    type: object
    properties:
      image: {type: string, maxLength: 10}
      tags: {type: array, maxItems: 5, items: {type: string, maxLength: 10}}
`)
	tests := []struct {
		name  string
		scope Scope
		expr  string
		want  Want
		err   string
	}{
		{"syntax error", Scope{}, "parent.spec.(", WantAny, "Syntax error"},
		{"unknown field against the schema", Scope{Parent: typed}, "parent.spec.imgae", WantAny, "undefined field 'imgae'"},
		{"metadata is typed in full", Scope{Parent: typed}, "parent.metadata.nmae", WantAny, "undefined field 'nmae'"},
		{"unknown variable", Scope{Variables: []Var{{Name: "a", Type: cel.IntType}}}, "variables.b", WantAny, "undefined field 'b'"},
		{"undeclared child id", Scope{Children: map[string]ObjectID{"pod": {}}}, "children.pdo", WantAny, "undefined field 'pdo'"},
		{"each outside forEach", Scope{}, "each.name", WantAny, "undeclared reference to 'each'"},
		{"wrong result type", Scope{}, "'yes'", WantBool, "must return a bool, but returns string"},
		{"cost over the limit", Scope{}, "parent.spec.items.all(x, parent.spec.items.all(y, parent.spec.items.all(z, x == y && y == z)))", WantAny, "over the limit of 1000000"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := mustEnv(t, tc.scope).Compile(tc.expr, tc.want)
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Fatalf("got error %v, want it to contain %q", err, tc.err)
			}
		})
	}
}

// TestBoundedSchemaKeepsCostLow: the bounds of the parent's schema (maxItems, maxProperties,
// maxLength) hold however a value is reached: directly, through an optional field and its
// orValue or value (the way to read a field that may be absent), an index, or cel.bind.
func TestBoundedSchemaKeepsCostLow(t *testing.T) {
	typed := parentType(t, `{type: object, properties: {spec: {type: object, properties: {
  tags: {type: array, maxItems: 5, items: {type: string, maxLength: 10}},
  names: {type: array, maxItems: 50, items: {type: string, maxLength: 63}},
  labels: {type: object, maxProperties: 50, additionalProperties: {type: string, maxLength: 63}}}}}}`)
	tests := []struct{ name, expr string }{
		{"a nested walk of a bounded list", "parent.spec.tags.all(x, parent.spec.tags.all(y, parent.spec.tags.all(z, x == y && y == z)))"},
		{"a nested walk through orValue", "parent.spec.?names.orValue([]).all(n, parent.spec.?names.orValue([]).all(m, n.startsWith(m)))"},
		{"a nested walk through value", "parent.spec.?names.value().all(n, parent.spec.?names.value().all(m, n.startsWith(m)))"},
		{"items of a list read through orValue", "parent.spec.?names.orValue([]).all(n, parent.spec.names.all(m, n.startsWith(m)))"},
		{"a nested walk of a bounded map through orValue", "parent.spec.?labels.orValue({}).all(k, parent.spec.?labels.orValue({}).all(j, parent.spec.labels[k].startsWith(parent.spec.labels[j])))"},
		{"a bounded map's values, by key", "parent.spec.labels.all(k, parent.spec.labels.all(j, parent.spec.labels[k].startsWith(parent.spec.labels[j])))"},
		{"a bound value", "cel.bind(ns, parent.spec.?names.orValue([]), ns.all(n, ns.all(m, n.startsWith(m))))"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := mustEnv(t, Scope{Parent: typed}).Compile(tc.expr, WantBool); err != nil {
				t.Fatalf("a walk over values the schema bounds must load: %v", err)
			}
		})
	}
}

func TestRuntimeErrors(t *testing.T) {
	env := mustEnv(t, Scope{})
	act := NewActivation(map[string]any{"parent": parent})
	tests := []struct {
		name string
		expr string
		want Want
		err  string
	}{
		{"missing key names the expression", "parent.spec.banner", WantAny, `evaluate "parent.spec.banner": no such key: banner`},
		{"dyn result of the wrong type", "parent.spec.image", WantBool, "must return a bool, got string"},
		{"forEach over a non-list", "parent.spec.size", WantList, "must return a list, got int"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p, err := env.Compile(tc.expr, tc.want)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := p.Eval(t.Context(), act, NewBudget()); err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Fatalf("got %v, want %q", err, tc.err)
			}
		})
	}
}

func TestBudgetIsSharedAcrossEvaluations(t *testing.T) {
	env := mustEnv(t, Scope{})
	p, err := env.Compile("parent.spec.items.map(x, x + x)", WantAny)
	if err != nil {
		t.Fatal(err)
	}
	act := NewActivation(map[string]any{"parent": parent})
	b := &Budget{remaining: 10}
	var lastErr error
	for range 10 {
		if _, lastErr = p.Eval(t.Context(), act, b); lastErr != nil {
			break
		}
	}
	if lastErr == nil || !strings.Contains(lastErr.Error(), "cost budget") {
		t.Fatalf("want the budget to run out, got %v", lastErr)
	}
}

func TestTypedParent(t *testing.T) {
	typed := parentType(t, `
type: object
properties:
  spec:
    type: object
    properties:
      image: {type: string}
      namespace: {type: string}
`)
	env := mustEnv(t, Scope{Parent: typed, Related: map[string]ObjectID{"peers": {List: true}}})
	obj := map[string]any{
		"metadata": map[string]any{"name": "app", "namespace": "team-a", "managedFields": []any{
			map[string]any{"manager": "metacel", "operation": "Apply", "time": "2025-01-02T03:04:05Z"},
		}},
		"spec": map[string]any{"image": "nginx", "namespace": "other"},
	}
	act := NewActivation(map[string]any{"parent": obj, "related": map[string]any{"peers": []any{
		map[string]any{"metadata": map[string]any{"name": "p1"}},
	}}})
	tests := []evalCase{
		{"metadata.namespace, a CEL keyword, reads plainly", "parent.metadata.namespace", "team-a"},
		{"a spec field named by a keyword too", "parent.spec.namespace", "other"},
		{"has() of a keyword field", "has(parent.metadata.namespace)", true},
		// metadata is bounded as the API server bounds it: a walk over an unbounded list that reads
		// the parent's name is linear, not 1000 times a 3 MB string
		{"a walk of a related list reading the parent's name", "related.peers.map(p, parent.metadata.name + '-' + p.metadata.name)", []any{"app-p1"}},
		{"metadata is all of ObjectMeta, managedFields too", "parent.metadata.managedFields[0].manager + ' ' + parent.metadata.managedFields[0].time", "metacel 2025-01-02T03:04:05Z"},
	}
	evaluateCases(t, env, act, tests)
}

func TestLongExpressionsAreShortenedInMessages(t *testing.T) {
	long := "parent.spec.imgae + '" + strings.Repeat("x", 5000) + "'"
	_, err := mustEnv(t, Scope{Parent: parentType(t, `{type: object, properties: {spec: {type: object, properties: {image: {type: string}}}}}`)}).Compile(long, WantAny)
	if err == nil {
		t.Fatal("want a compile error")
	}
	if msg := err.Error(); len(msg) > 400 || !strings.Contains(msg, "(5022 characters)") || !strings.Contains(msg, "undefined field 'imgae'") {
		t.Errorf("the message must be short and keep its point, got %d characters: %.400s", len(msg), msg)
	}
}
