package projection

import (
	"reflect"
	"testing"
)

func TestFieldsSayWhatIsKept(t *testing.T) {
	tests := []struct {
		name   string
		fields *Fields
		want   string
		covers [][]string
		not    [][]string
	}{
		{"nothing kept but the identity", &Fields{}, "{}", nil, [][]string{{"spec"}}},
		{"a nil Fields keeps the whole object", nil, "*", [][]string{{"spec", "x"}}, nil},
		{"a path keeps everything below it", (&Fields{}).Keep("spec", "containers"), "{spec{containers}}",
			[][]string{{"spec", "containers", "image"}}, [][]string{{"spec"}, {"status"}}},
		{"a shorter path swallows a longer one", (&Fields{}).Keep("spec", "a", "b").Keep("spec"), "{spec}",
			[][]string{{"spec", "a"}, {"spec", "z"}}, nil},
		{"a longer path under a kept one changes nothing", (&Fields{}).Keep("spec").Keep("spec", "a", "b"), "{spec}", nil, nil},
		{"an empty path keeps all", (&Fields{}).Keep("spec", "a").Keep(), "*", [][]string{{"status"}}, nil},
		{"adding unions", (&Fields{}).Keep("spec", "a").Add((&Fields{}).Keep("spec", "b").Keep("status")), "{spec{a,b},status}",
			[][]string{{"spec", "b", "c"}, {"status", "phase"}}, [][]string{{"spec", "c"}}},
		{"adding nil keeps all", (&Fields{}).Keep("spec", "a").Add(nil), "*", nil, nil},
		{"names are sorted, commas escaped", (&Fields{}).Keep("b").Keep("a,b"), `{a\,b,b}`, nil, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.fields.String(); got != tc.want {
				t.Errorf("String() = %q, want %q", got, tc.want)
			}
			for _, p := range tc.covers {
				if !tc.fields.Covers(p...) {
					t.Errorf("does not cover %v", p)
				}
			}
			for _, p := range tc.not {
				if tc.fields.Covers(p...) {
					t.Errorf("covers %v", p)
				}
			}
		})
	}
}

func TestMapKeepsTheIdentityAndTheFieldsNamedOfEveryListItem(t *testing.T) {
	obj := map[string]any{
		"apiVersion": "v1", "kind": "Pod", "metadata": map[string]any{"name": "p"},
		"spec": map[string]any{
			"containers":    []any{map[string]any{"name": "a", "image": "i", "resources": map[string]any{}}, map[string]any{"name": "b"}},
			"restartPolicy": "Always",
			"nodeSelector":  map[string]any{"x": "y"},
		},
		"status": map[string]any{"phase": "Running", "podIP": "10.0.0.1"},
	}
	keep := (&Fields{}).Keep("spec", "containers", "name").Keep("spec", "containers", "image").Keep("spec", "nodeSelector").Keep("status", "phase")
	want := map[string]any{
		"apiVersion": "v1", "kind": "Pod", "metadata": map[string]any{"name": "p"},
		"spec": map[string]any{
			"containers":   []any{map[string]any{"name": "a", "image": "i"}, map[string]any{"name": "b"}},
			"nodeSelector": map[string]any{"x": "y"},
		},
		"status": map[string]any{"phase": "Running"},
	}
	if got := Map(obj, keep); !reflect.DeepEqual(got, want) {
		t.Errorf("Map() = %v, want %v", got, want)
	}
	if got := Map(obj, nil); !reflect.DeepEqual(got, obj) {
		t.Errorf("Map(nil) = %v, want the object", got)
	}
}
