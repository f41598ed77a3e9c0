package expr

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/api/equality"
)

// TestAConditionalWithANullBranchLeavesTheFieldOut: "${cond ? value : null}", the way authors
// write an optional field, type-checks as a template field's whole value, and null leaves the
// field out.
func TestAConditionalWithANullBranchLeavesTheFieldOut(t *testing.T) {
	env := mustEnv(t, Scope{Parent: parentType(t, `
type: object
properties:
  spec:
    type: object
    properties:
      image: {type: string}
      banner: {type: string}
      ports: {type: array, maxItems: 10, items: {type: integer}}
`)})
	with := map[string]any{"metadata": map[string]any{"name": "app"}, "spec": map[string]any{"image": "nginx", "banner": "hi", "ports": []any{int64(80)}}}
	without := map[string]any{"metadata": map[string]any{"name": "app"}, "spec": map[string]any{"image": "nginx"}}
	tmpl := map[string]any{
		"image": "${parent.spec.image}",
		"env":   "${has(parent.spec.banner) ? [{'name': 'BANNER', 'value': parent.spec.banner}] : null}",
		"ports": "${has(parent.spec.ports) ? parent.spec.ports.map(p, {'containerPort': p}) : null}",
		"first": "${!has(parent.spec.banner) ? null : {'banner': parent.spec.banner}}",
		"tier":  "${has(parent.spec.banner) ? 'front' : has(parent.spec.ports) ? 'back' : null}",
		"items": []any{"${has(parent.spec.banner) ? parent.spec.banner : null}", "x"},
	}
	tests := []struct {
		name   string
		parent map[string]any
		want   map[string]any
	}{
		{"the condition holds: the field has the value", with, map[string]any{
			"image": "nginx",
			"env":   []any{map[string]any{"name": "BANNER", "value": "hi"}},
			"ports": []any{map[string]any{"containerPort": int64(80)}},
			"first": map[string]any{"banner": "hi"},
			"tier":  "front",
			"items": []any{"hi", "x"},
		}},
		{"it does not: the field is left out", without, map[string]any{
			"image": "nginx",
			"items": []any{"x"},
		}},
	}
	compiled, err := env.CompileTemplate(tmpl, "spec.children[0].template")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := compiled.Eval(t.Context(), NewActivation(map[string]any{"parent": tc.parent}), NewBudget())
			if err != nil {
				t.Fatal(err)
			}
			if !equality.Semantic.DeepEqual(got, tc.want) {
				t.Errorf("got %#v, want %#v", got, tc.want)
			}
		})
	}
}

// TestAConditionalTypeErrorSaysWhatWorks: where a null branch cannot work (inside a string, in a
// plain expression) or the branches differ otherwise, the error says how to write it.
func TestAConditionalTypeErrorSaysWhatWorks(t *testing.T) {
	env := mustEnv(t, Scope{})
	tests := []struct {
		name string
		tmpl any
		want []string
	}{
		{"a null branch inside a string", "name-${parent.spec.size > 1 ? 'big' : null}",
			[]string{`found no matching overload for '_?_:_'`, `make the conditional its whole value: "${c ? value : null}"`, "optional.of(value)"}},
		{"branches of two types as a whole value", "${parent.spec.size > 1 ? 'big' : 1}",
			[]string{`found no matching overload for '_?_:_' applied to '(bool, string, int)'`, "must have the same type (null may be either, to leave the field out)", "dyn(...)"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := env.CompileTemplate(tc.tmpl, "x")
			for _, want := range tc.want {
				if err == nil || !strings.Contains(err.Error(), want) {
					t.Fatalf("got %v, want it to contain %q", err, want)
				}
			}
		})
	}
	t.Run("a null branch in an expression that is no template field", func(t *testing.T) {
		_, err := env.Compile("parent.spec.size > 1 ? [1] : null", WantAny)
		if err == nil || !strings.Contains(err.Error(), `"${c ? value : null}"`) {
			t.Fatalf("got %v", err)
		}
	})
}
