package plan

import (
	"slices"
	"testing"
)

func TestDiff(t *testing.T) {
	tests := []struct {
		name          string
		before, after any
		want          []string
	}{
		{"equal values differ in nothing", map[string]any{"a": int64(1)}, map[string]any{"a": 1.0}, nil},
		{"a field added, removed and changed, in path order",
			map[string]any{"a": "x", "b": "y"}, map[string]any{"b": "z", "c": true},
			[]string{`a: "x" → (absent)`, `b: "y" → "z"`, `c: (absent) → true`}},
		{"a label with a dot or slash is quoted",
			map[string]any{"metadata": map[string]any{"labels": map[string]any{"app.kubernetes.io/name": "a"}}},
			map[string]any{"metadata": map[string]any{"labels": map[string]any{"app.kubernetes.io/name": "b"}}},
			[]string{`metadata.labels["app.kubernetes.io/name"]: "a" → "b"`}},
		{"named items match by name, wherever they are",
			map[string]any{"containers": []any{map[string]any{"name": "a", "image": "1"}, map[string]any{"name": "b", "image": "1"}}},
			map[string]any{"containers": []any{map[string]any{"name": "b", "image": "2"}, map[string]any{"name": "a", "image": "1"}}},
			[]string{`containers[name=b].image: "1" → "2"`}},
		{"a keyed list that appears lists its items",
			map[string]any{}, map[string]any{"conditions": []any{map[string]any{"type": "Ready", "status": "True"}}},
			[]string{`conditions[type=Ready]: (absent) → {"status":"True","type":"Ready"}`}},
		{"other lists compare by position",
			[]any{"a", "b"}, []any{"a", "c", "d"},
			[]string{`[1]: "b" → "c"`, `[2]: (absent) → "d"`}},
		{"the desired-hash annotation is left out",
			map[string]any{"metadata": map[string]any{"annotations": map[string]any{"metacel.dev/desired-hash": "1"}}},
			map[string]any{"metadata": map[string]any{"annotations": map[string]any{"metacel.dev/desired-hash": "2"}}},
			nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got []string
			for _, f := range diff(tt.before, tt.after) {
				got = append(got, f.String())
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("got %q, want %q", got, tt.want)
			}
		})
	}
}
