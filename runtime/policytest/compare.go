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
// expectation gives; "" when they agree. The children the step gave are first put in the terms of
// the expected ones (authorsTerms: child ids, name patterns, a Secret's stringData), and the diff
// ends with a note where that matters. With match: subset, what the step gave is then cut down to
// the shape of the expectation (projectSubset), so the diff shows only what differs.
func compare(exp *Expect, got *outcome) string {
	want, have := map[string]any{}, map[string]any{}
	var notes []string
	put := func(key string, e, g any) {
		if !exp.Has[key] {
			return
		}
		want[key], have[key] = normalize(e), normalize(g)
		if key == "children" {
			have[key], notes = authorsTerms(want[key], have[key])
		}
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
	diff := unifiedDiff(want, have)
	if !reflect.DeepEqual(want["children"], have["children"]) {
		for _, n := range notes {
			diff += "note: " + n + "\n"
		}
	}
	return diff
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
// kind, name or id, and (when given) namespace (childKey); any other list item by item, and must
// have as many items. An empty list expects an empty list. What got lacks stays lacking, so the
// diff shows it.
func projectSubset(want, got any, children bool) any {
	return project(want, got, children, false)
}

// recordSubset is what --update records for a subset expectation: got cut down as projectSubset
// cuts it, so that it holds no field the expectation leaves out, and passes. Where the cut would
// leave an empty list and got has items (the expected ones are gone, or the expectation said
// none), an empty list would expect none: got's items are recorded by what identifies them
// (identities), never whole.
func recordSubset(want, got any, children bool) any {
	return project(want, got, children, true)
}

func project(want, got any, children, record bool) any {
	switch w := want.(type) {
	case map[string]any:
		g, ok := got.(map[string]any)
		if !ok {
			return got
		}
		out := make(map[string]any, len(w))
		for k, wv := range w {
			if gv, ok := g[k]; ok {
				out[k] = project(wv, gv, false, record)
			}
		}
		return out
	case []any:
		g, ok := got.([]any)
		if !ok {
			return got
		}
		var out []any
		switch key := listKey(w); {
		case len(w) == 0 && (!record || len(g) == 0):
			return g // an empty list expects an empty one: as a subset it would hold anything
		case len(w) == 0:
			return identities(g, children)
		case children:
			out = projectKeyed(w, g, childKey, record)
		case key == nil:
			return projectItems(w, g, record)
		default:
			out = projectKeyed(w, g, key, record)
		}
		if record && len(out) == 0 && len(g) > 0 {
			return identities(g, children)
		}
		return out
	}
	return got
}

func projectItems(want, got []any, record bool) []any {
	out := make([]any, len(got))
	for i := range got {
		if i < len(want) {
			out[i] = project(want[i], got[i], false, record)
		} else {
			out[i] = got[i]
		}
	}
	return out
}

// projectKeyed matches each item of want with the first item of got the key matches that no
// earlier item of want took.
func projectKeyed(want, got []any, key func(want, item any) bool, record bool) []any {
	out := []any{}
	taken := make([]bool, len(got))
	for _, wi := range want {
		for j, gi := range got {
			if !taken[j] && key(wi, gi) {
				taken[j] = true
				out = append(out, project(wi, gi, false, record))
				break
			}
		}
	}
	return out
}

// identities are items cut down to what identifies them: a child's apiVersion, kind, name and
// namespace; an item's "type" or "name" where every item has one; a scalar (or an item with
// neither) whole.
func identities(items []any, children bool) []any {
	key := ""
	if !children {
		for _, field := range []string{"type", "name"} {
			if allHave(items, field) {
				key = field
				break
			}
		}
	}
	out := make([]any, len(items))
	for i, it := range items {
		m, ok := it.(map[string]any)
		switch {
		case !ok:
			out[i] = it
		case children:
			out[i] = childIdentity(m)
		case key != "":
			out[i] = map[string]any{key: m[key]}
		default:
			out[i] = it
		}
	}
	return out
}

// childIdentity is what identifies a child: apiVersion, kind, name (or id, when that is how the
// expectation names it) and namespace.
func childIdentity(m map[string]any) map[string]any {
	out := map[string]any{}
	for _, k := range []string{"apiVersion", "kind", "id"} {
		if v, ok := m[k]; ok {
			out[k] = v
		}
	}
	meta := map[string]any{}
	for _, k := range []string{"name", "namespace"} {
		if v := nested(m, "metadata", k); v != nil {
			meta[k] = v
		}
	}
	if len(meta) > 0 {
		out["metadata"] = meta
	}
	return out
}

func allHave(items []any, field string) bool {
	for _, it := range items {
		m, ok := it.(map[string]any)
		if _, has := m[field]; !ok || !has {
			return false
		}
	}
	return len(items) > 0
}

// listKey says how a list of objects is matched in subset mode: by "type" or "name" when every
// item has it; nil (item by item) otherwise.
func listKey(items []any) func(want, item any) bool {
	for _, field := range []string{"type", "name"} {
		if allHave(items, field) {
			return func(want, item any) bool {
				w, _ := want.(map[string]any)
				g, _ := item.(map[string]any)
				return g != nil && reflect.DeepEqual(w[field], g[field])
			}
		}
	}
	return nil
}

// childKey matches an expected child with a rendered one, both in the expectation's terms
// (authorsTerms): kind; name and id, each when the expectation gives it (one of them at least);
// namespace when the expectation gives one.
func childKey(want, item any) bool {
	w, _ := want.(map[string]any)
	g, _ := item.(map[string]any)
	if w == nil || g == nil || !reflect.DeepEqual(w["kind"], g["kind"]) {
		return false
	}
	name, id := nested(w, "metadata", "name"), w["id"]
	if name == nil && id == nil {
		return false
	}
	for _, f := range [][]string{{"metadata", "name"}, {"id"}, {"metadata", "namespace"}} {
		if v := nested(w, f...); v != nil && !reflect.DeepEqual(v, nested(g, f...)) {
			return false
		}
	}
	return true
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
