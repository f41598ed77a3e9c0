package expr

import (
	"reflect"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"sigs.k8s.io/yaml"
)

// A whole number in a number field is bound as a double, as the schema types it: an int there
// failed every expression that used it as one (string(parent.spec.ratio): no such overload).
func TestAWholeNumberInANumberFieldIsADouble(t *testing.T) {
	const spec = `
type: object
properties:
  spec:
    type: object
    properties:
      ratio: {type: number}
      size: {type: integer}
      weights: {type: array, items: {type: number}}
      limits: {type: object, additionalProperties: {type: number}}
`
	schema := &apiextensionsv1.JSONSchemaProps{}
	if err := yaml.Unmarshal([]byte(spec), schema); err != nil {
		t.Fatal(err)
	}
	in := map[string]any{"spec": map[string]any{"ratio": int64(2), "size": int64(3), "weights": []any{int64(1), 0.5},
		"limits": map[string]any{"cpu": int64(2)}}, "metadata": map[string]any{"generation": int64(4)}}
	before, _ := yaml.Marshal(in)
	got := NumbersOf(schema).AsDoubles(in)
	want := map[string]any{"spec": map[string]any{"ratio": 2.0, "size": int64(3), "weights": []any{1.0, 0.5},
		"limits": map[string]any{"cpu": 2.0}}, "metadata": map[string]any{"generation": int64(4)}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("AsDoubles = %v, want %v", got, want)
	}
	if after, _ := yaml.Marshal(in); string(after) != string(before) {
		t.Errorf("the object given was modified:\n%s", after)
	}
	if got := NumbersOf(schema).AsDoubles(want); !reflect.DeepEqual(got, want) {
		t.Errorf("doubles already: %v", got)
	}
	env := mustEnv(t, Scope{Parent: parentType(t, spec)})
	p, err := env.Compile("string(parent.spec.ratio) + ':' + string(parent.spec.ratio * 2.0)", WantString)
	if err != nil {
		t.Fatal(err)
	}
	v, err := p.Eval(t.Context(), NewActivation(map[string]any{"parent": NumbersOf(schema).AsDoubles(in)}), NewBudget())
	if err != nil || v.Value() != "2:4" {
		t.Errorf("evaluated %v (%v), want 2:4", v, err)
	}
}
