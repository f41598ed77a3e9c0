package policytest

import (
	"encoding/json"
	"reflect"
	"strings"

	"github.com/pmezard/go-difflib/difflib"
	utiljson "k8s.io/apimachinery/pkg/util/json"
	"sigs.k8s.io/yaml"
)

// compare returns a unified diff of what a step expects and what it gave, over the keys the
// expectation gives; "" when they agree. With match: subset, what the step gave is first cut down
// to the shape of the expectation (projectSubset), so the diff shows only what differs.
func compare(exp *Expect, got *outcome) string {
	want, have := map[string]any{}, map[string]any{}
	put := func(key string, e, g any) {
		if !exp.Has[key] {
			return
		}
		want[key], have[key] = normalize(e), normalize(g)
		if exp.Match == MatchSubset {
			have[key] = projectSubset(want[key], have[key], key == "children")
		}
	}
	put("children", exp.Children, got.children)
	put("status", exp.Status, got.status)
	put("changes", exp.Changes, got.changes)
	if exp.Has["error"] {
		want["error"], have["error"] = exp.Error, got.errText
		if exp.Match == MatchSubset && got.errText != "" && strings.Contains(got.errText, exp.Error) {
			have["error"] = exp.Error
		}
	}
	if reflect.DeepEqual(want, have) {
		return ""
	}
	return unifiedDiff(want, have)
}

// normalize gives a value the types JSON decoding gives (int64 or float64 numbers, []any,
// map[string]any), so that values read from YAML and values rendered compare by value.
func normalize(v any) any {
	data, err := json.Marshal(v)
	if err != nil {
		return v
	}
	var out any
	if err := utiljson.Unmarshal(data, &out); err != nil {
		return v
	}
	return out
}

// projectSubset cuts got down to the shape of want: the keys of want's maps, and the items of its
// lists. A list of objects that all have a "type" (conditions) or a "name" (containers) is matched
// by that key, whatever the order, and got's other items are left out; children are matched by
// kind, name and (when given) namespace; any other list item by item, and must have as many
// items. An empty list expects an empty list. What got lacks stays lacking, so the diff shows it.
func projectSubset(want, got any, children bool) any {
	switch w := want.(type) {
	case map[string]any:
		g, ok := got.(map[string]any)
		if !ok {
			return got
		}
		out := make(map[string]any, len(w))
		for k, wv := range w {
			if gv, ok := g[k]; ok {
				out[k] = projectSubset(wv, gv, false)
			}
		}
		return out
	case []any:
		g, ok := got.([]any)
		if !ok || len(w) == 0 {
			return got // an empty list expects an empty one: as a subset it would hold anything
		}
		key := listKey(w)
		if children {
			key = childKey
		}
		if key == nil {
			return projectItems(w, g)
		}
		return projectKeyed(w, g, key)
	}
	return got
}

func projectItems(want, got []any) []any {
	out := make([]any, len(got))
	for i := range got {
		if i < len(want) {
			out[i] = projectSubset(want[i], got[i], false)
		} else {
			out[i] = got[i]
		}
	}
	return out
}

func projectKeyed(want, got []any, key func(want, item any) bool) []any {
	out := []any{}
	for _, wi := range want {
		for _, gi := range got {
			if key(wi, gi) {
				out = append(out, projectSubset(wi, gi, false))
				break
			}
		}
	}
	return out
}

// listKey says how a list of objects is matched in subset mode: by "type" or "name" when every
// item has it; nil (item by item) otherwise.
func listKey(items []any) func(want, item any) bool {
	for _, field := range []string{"type", "name"} {
		all := len(items) > 0
		for _, it := range items {
			m, ok := it.(map[string]any)
			if _, has := m[field]; !ok || !has {
				all = false
			}
		}
		if all {
			return func(want, item any) bool {
				w, _ := want.(map[string]any)
				g, _ := item.(map[string]any)
				return g != nil && reflect.DeepEqual(w[field], g[field])
			}
		}
	}
	return nil
}

// childKey matches an expected child with a rendered one: kind, name and, when the expectation
// gives one, namespace.
func childKey(want, item any) bool {
	field := func(v any, path ...string) any {
		for _, p := range path {
			m, _ := v.(map[string]any)
			v = m[p]
		}
		return v
	}
	if !reflect.DeepEqual(field(want, "kind"), field(item, "kind")) || !reflect.DeepEqual(field(want, "metadata", "name"), field(item, "metadata", "name")) {
		return false
	}
	ns := field(want, "metadata", "namespace")
	return ns == nil || reflect.DeepEqual(ns, field(item, "metadata", "namespace"))
}

// unifiedDiff shows two values as YAML, line by line.
func unifiedDiff(want, got any) string {
	a, _ := yaml.Marshal(want)
	b, _ := yaml.Marshal(got)
	diff, err := difflib.GetUnifiedDiffString(difflib.UnifiedDiff{
		A: difflib.SplitLines(string(a)), B: difflib.SplitLines(string(b)),
		FromFile: "expected", ToFile: "got", Context: 3,
	})
	if err != nil {
		return err.Error()
	}
	return diff
}
