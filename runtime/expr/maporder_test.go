package expr

import "testing"

// A comprehension over a map iterates it by its keys in order, so that a list built from a map
// is the same at every evaluation: one that came out in another order would be a child that
// differs at every render, written at every sync. Each case is evaluated many times.
func TestAMapIsIteratedByItsKeysInOrder(t *testing.T) {
	env := mustEnv(t, Scope{})
	m := map[string]any{}
	for _, k := range []string{"h", "c", "a", "g", "e", "b", "f", "d"} {
		m[k] = k + "-value"
	}
	act := NewActivation(map[string]any{"parent": map[string]any{"spec": map[string]any{"env": m}}})
	keys := []any{"a", "b", "c", "d", "e", "f", "g", "h"}
	tests := []evalCase{
		{"map over the parent's map", "parent.spec.env.map(k, k)", keys},
		{"env entries from a map", "parent.spec.env.map(k, {'name': k, 'value': parent.spec.env[k]})[0]", map[string]any{"name": "a", "value": "a-value"}},
		{"filter", "parent.spec.env.filter(k, k > 'e')", []any{"f", "g", "h"}},
		{"two-variable transformList", "parent.spec.env.transformList(k, v, v)[7]", "h-value"},
		{"a map built in the expression", "{'z': 1, 'y': 2, 'x': 3, 'w': 4, 'v': 5, 'u': 6}.map(k, k)", []any{"u", "v", "w", "x", "y", "z"}},
		{"integer keys by value", "{10: 'a', 9: 'b', 100: 'c', -1: 'd', 2: 'e', 30: 'f'}.map(k, k)", []any{int64(-1), int64(2), int64(9), int64(10), int64(30), int64(100)}},
		{"an expression metered (join)", "parent.spec.env.map(k, k).join(',')", "a,b,c,d,e,f,g,h"},
	}
	for range 30 { // Go's map order differs from one iteration to the next
		evaluateCases(t, env, act, tests)
	}
}
