package plan

import (
	"encoding/json"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"

	"metacel.dev/metacel/runtime/contract"
)

// FieldChange is one field whose value changes. Old or New is nil when the field is absent.
type FieldChange struct {
	// Path names the field: metadata.labels.version, spec.containers[name=app].image,
	// status.conditions[type=Ready].message.
	Path string `json:"path"`
	Old  any    `json:"old,omitempty"`
	New  any    `json:"new,omitempty"`
}

func (f FieldChange) String() string {
	return fmt.Sprintf("%s: %s → %s", f.Path, valueText(f.Old), valueText(f.New))
}

// valueText writes a value as compact JSON, or "(absent)".
func valueText(v any) string {
	if v == nil {
		return "(absent)"
	}
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(b)
}

// diff lists the fields that differ between two JSON-like values (maps, lists, scalars), in
// path order. Lists whose items are objects with distinct names (containers, env) or types
// (conditions) are compared item by item by that key, other lists by position. The
// metacel.dev/content-hash annotation (and the desired-hash of runtimes before it), which changes
// with any change, is left out.
func diff(before, after any) []FieldChange {
	var out []FieldChange
	diffValue("", before, after, &out)
	return out
}

func diffValue(path string, before, after any, out *[]FieldChange) {
	if path == "metadata.annotations"+keyPath(contract.AnnotationContentHash) || path == "metadata.annotations"+keyPath(contract.AnnotationDesiredHash) {
		return
	}
	bm, bIsMap := before.(map[string]any)
	am, aIsMap := after.(map[string]any)
	if bIsMap && aIsMap {
		diffMaps(path, bm, am, out)
		return
	}
	bl, bIsList := before.([]any)
	al, aIsList := after.([]any)
	if (bIsList || before == nil) && (aIsList || after == nil) && (bIsList || aIsList) && listKey(bl, al) != "" {
		diffLists(path, bl, al, out) // a keyed list that appears or goes: item by item
		return
	}
	if bIsList && aIsList {
		diffLists(path, bl, al, out)
		return
	}
	if !sameValue(before, after) {
		*out = append(*out, FieldChange{Path: path, Old: before, New: after})
	}
}

func diffMaps(path string, before, after map[string]any, out *[]FieldChange) {
	keys := slices.Sorted(maps.Keys(before))
	for k := range after {
		if _, ok := before[k]; !ok {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	for _, k := range keys {
		p := path + keyPath(k)
		if path == "" {
			p = k
		}
		diffValue(p, before[k], after[k], out)
	}
}

// diffLists compares lists by their items' key when both have one, else by position.
func diffLists(path string, before, after []any, out *[]FieldChange) {
	key := listKey(before, after)
	if key == "" {
		for i := range max(len(before), len(after)) {
			diffValue(fmt.Sprintf("%s[%d]", path, i), at(before, i), at(after, i), out)
		}
		return
	}
	b, a := byKey(before, key), byKey(after, key)
	names := slices.Sorted(maps.Keys(b))
	for n := range a {
		if _, ok := b[n]; !ok {
			names = append(names, n)
		}
	}
	slices.Sort(names)
	for _, n := range names {
		diffValue(fmt.Sprintf("%s[%s=%s]", path, key, n), b[n], a[n], out)
	}
}

// listKey is "name" or "type" when every item of both lists is an object with a distinct string
// value of it, else "".
func listKey(lists ...[]any) string {
	for _, key := range []string{"name", "type"} {
		if keyed(key, lists...) {
			return key
		}
	}
	return ""
}

func keyed(key string, lists ...[]any) bool {
	for _, l := range lists {
		seen := map[string]bool{}
		for _, item := range l {
			m, ok := item.(map[string]any)
			if !ok {
				return false
			}
			v, ok := m[key].(string)
			if !ok || seen[v] {
				return false
			}
			seen[v] = true
		}
	}
	return true
}

func byKey(l []any, key string) map[string]any {
	out := make(map[string]any, len(l))
	for _, item := range l {
		out[item.(map[string]any)[key].(string)] = item
	}
	return out
}

func at(l []any, i int) any {
	if i < len(l) {
		return l[i]
	}
	return nil
}

// keyPath is a map key as a path step: .key, or ["key"] when it holds a dot or a slash (a label).
func keyPath(k string) string {
	if strings.ContainsAny(k, "./[]") {
		return fmt.Sprintf("[%q]", k)
	}
	return "." + k
}

// sameValue compares scalars, numbers by value (2 and 2.0 are equal, as the API server stores
// them).
func sameValue(a, b any) bool {
	if x, ok := number(a); ok {
		y, ok := number(b)
		return ok && x == y
	}
	return reflect.DeepEqual(a, b)
}

func number(v any) (float64, bool) {
	switch n := v.(type) {
	case int64:
		return float64(n), true
	case int:
		return float64(n), true
	case int32:
		return float64(n), true
	case float64:
		return n, true
	}
	return 0, false
}
