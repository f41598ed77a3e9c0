package expr

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/api/equality"
)

func TestTemplates(t *testing.T) {
	env := mustEnv(t, Scope{})
	act := NewActivation(map[string]any{"parent": parent})
	tests := []struct {
		name string
		tmpl any
		want any
	}{
		{"whole expression keeps its type", "${parent.spec.size}", int64(3)},
		{"whole expression may be a list", "${parent.spec.items}", []any{"a", "b"}},
		{"interpolation builds a string", "${parent.metadata.name}-${parent.spec.size}", "app-3"},
		{"spaces inside the braces", "${ parent.metadata.name }", "app"},
		{"escape gives a literal", "$${HOME} and ${parent.metadata.name}", "${HOME} and app"},
		{"braces inside expressions", "${ {'a': '}'}['a'] }", "}"},
		{"shell variables stay", `echo "$BANNER"`, `echo "$BANNER"`},
		{"absent optional leaves the field out", map[string]any{"a": "${parent.spec.?banner}", "b": "x"}, map[string]any{"b": "x"}},
		{"null leaves the field out", map[string]any{"a": "${null}"}, map[string]any{}},
		{"lists evaluate each item", []any{"${parent.metadata.name}", int64(1)}, []any{"app", int64(1)}},
		{"constants are copied", map[string]any{"k": []any{"v"}}, map[string]any{"k": []any{"v"}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tmpl, err := env.CompileTemplate(tc.tmpl, "x")
			if err != nil {
				t.Fatal(err)
			}
			got, err := tmpl.Eval(t.Context(), act, NewBudget())
			if err != nil {
				t.Fatal(err)
			}
			if !equality.Semantic.DeepEqual(got, tc.want) {
				t.Errorf("got %#v, want %#v", got, tc.want)
			}
		})
	}
}

func TestTemplateErrors(t *testing.T) {
	env := mustEnv(t, Scope{})
	tests := []struct {
		name string
		tmpl any
		err  string
	}{
		{"unterminated", map[string]any{"a": "${parent"}, `a: unterminated "${" at offset 0`},
		{"empty", []any{"x", "${}"}, `[1]: empty expression "${}"`},
		{"list interpolated into a string", "a-${[1, 2]}", "inside a string only strings, numbers and bools can be interpolated"},
		{"template in a key", map[string]any{"${x}": 1}, "a map key cannot be a template"},
		{"nested path with a dotted key", map[string]any{"labels": map[string]any{"app.kubernetes.io/name": "${nope}"}}, `labels["app.kubernetes.io/name"]: compile "nope"`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := env.CompileTemplate(tc.tmpl, "")
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Fatalf("got %v, want %q", err, tc.err)
			}
		})
	}
}

func FuzzTemplate(f *testing.F) {
	for _, s := range []string{"${a}", "x-${'}'}-y", "$${", "${ {'a': \"}\"} }", "${r'\\'}", "${'''x'''}", "${"} {
		f.Add(s)
	}
	env, err := NewEnv(Scope{})
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, s string) {
		segs, err := splitTemplate(s)
		if err != nil {
			return
		}
		if len(segs) == 0 {
			t.Fatalf("no segments for %q", s)
		}
		_, _ = env.CompileString(s, "fuzz", WantAny)
	})
}
