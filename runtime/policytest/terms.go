package policytest

import (
	"encoding/base64"
	"fmt"
	"path"
	"reflect"
	"strings"
	"unicode/utf8"

	"metacel.dev/metacel/runtime/contract"
)

// An expected child is written in the author's terms, which are not always the object's own:
//
//   - `id: <child id>` names the policy's child (children[].id) that made it, for a child whose
//     name is computed (a Job named after a hash of its spec); it is the test's key, no field of
//     the object, and the child carries it in its metacel.dev/child-id label;
//   - a metadata.name with `*`, `?` or `[` is a glob (path.Match): those characters are in no
//     Kubernetes name, so a name that holds one can only be a pattern;
//   - a Secret's `stringData` is what the policy writes, but the API server stores it base64
//     encoded in `data` (render's stored form), and so does the rendered child.
//
// authorsTerms rewrites the children a step gave in the terms of the expected ones before they are
// compared (and recorded by --update): each expected child is paired with the first child not
// yet paired that it identifies (matchesChild), and that child then carries the expectation's id,
// its name pattern (no name at all when the expectation identifies it by id alone), and, for each
// key the expectation gives in stringData, the value of its data decoded. Comparing the decoded
// value is comparing the expected value base64-encoded, as the API server stores it; the diff
// then shows the values as the test gives them. notes say where stringData was compared so, for a
// diff to say it.
func authorsTerms(want, got any) (out any, notes []string) {
	w, _ := want.([]any)
	g, ok := got.([]any)
	if !ok {
		return got, nil
	}
	rewritten := make([]any, len(g))
	copy(rewritten, g)
	paired := make([]bool, len(g))
	for _, wi := range w {
		exp, _ := wi.(map[string]any)
		for j, gi := range g {
			child, _ := gi.(map[string]any)
			if paired[j] || exp == nil || child == nil || !matchesChild(exp, child) {
				continue
			}
			paired[j] = true
			var note string
			rewritten[j], note = inTermsOf(exp, child)
			if note != "" {
				notes = append(notes, note)
			}
			break
		}
	}
	return rewritten, notes
}

// matchesChild reports whether an expected child identifies a rendered one: the same kind, the
// namespace when the expectation gives one, the child id when it gives `id`, and the name (or the
// name pattern) when it gives metadata.name. An expectation with neither name nor id identifies
// nothing.
func matchesChild(exp, child map[string]any) bool {
	name, hasName := nested(exp, "metadata", "name").(string)
	id, hasID := exp["id"].(string)
	if !hasName && !hasID || !reflect.DeepEqual(exp["kind"], child["kind"]) {
		return false
	}
	if ns := nested(exp, "metadata", "namespace"); ns != nil && !reflect.DeepEqual(ns, nested(child, "metadata", "namespace")) {
		return false
	}
	if hasID && id != childID(child) {
		return false
	}
	return !hasName || nameMatches(name, nested(child, "metadata", "name"))
}

// nameMatches reports whether an expected name (or name pattern) matches a child's name.
func nameMatches(pattern string, name any) bool {
	s, _ := name.(string)
	if !isPattern(pattern) {
		return pattern == s
	}
	ok, err := path.Match(pattern, s)
	return err == nil && ok
}

// isPattern reports whether an expected name is a glob: it holds a character no Kubernetes name
// has.
func isPattern(name string) bool {
	return strings.ContainsAny(name, "*?[")
}

// childID is the child id a rendered child carries in its metacel.dev/child-id label.
func childID(child map[string]any) string {
	id, _ := nested(child, "metadata", "labels", contract.LabelChildID).(string)
	return id
}

// inTermsOf is a copy of child in the terms of exp, which identifies it (authorsTerms).
func inTermsOf(exp, child map[string]any) (map[string]any, string) {
	out := copyMap(child)
	meta := copyMap(asMap(out["metadata"]))
	out["metadata"] = meta
	if _, ok := exp["id"]; ok {
		out["id"] = childID(child)
	}
	switch name, ok := nested(exp, "metadata", "name").(string); {
	case !ok:
		delete(meta, "name") // identified by id: its generated name is no part of the expectation
	case isPattern(name):
		meta["name"] = name
	}
	if !isSecret(exp) {
		return out, ""
	}
	strs := asMap(exp["stringData"])
	if len(strs) == 0 {
		return out, ""
	}
	decodeStringData(out, strs, exp["data"] != nil)
	return out, fmt.Sprintf("Secret %s: stringData is compared with the data the policy writes, base64-decoded: the API server stores stringData in data, as the child shows",
		describeName(exp, child))
}

// decodeStringData moves each key of want from the Secret's data to its stringData, decoded, when
// its value is base64 of text; a value that is not stays in data, for the diff to show. data
// itself goes when it is left empty and the expectation gives none.
func decodeStringData(secret, want map[string]any, keepData bool) {
	data := copyMap(asMap(secret["data"]))
	strs := copyMap(asMap(secret["stringData"]))
	for k := range want {
		s, ok := data[k].(string)
		if !ok {
			continue
		}
		b, err := base64.StdEncoding.DecodeString(s)
		if err != nil || !utf8.Valid(b) {
			continue
		}
		strs[k] = string(b)
		delete(data, k)
	}
	secret["stringData"] = strs
	switch {
	case len(data) == 0 && !keepData:
		delete(secret, "data")
	case secret["data"] != nil:
		secret["data"] = data
	}
}

// isSecret reports whether an expected child is a core Secret (its apiVersion v1, or not given).
func isSecret(exp map[string]any) bool {
	v, _ := exp["apiVersion"].(string)
	return exp["kind"] == "Secret" && (v == "" || v == "v1")
}

// describeName is namespace/name of a child, as the expectation names it when it gives a name.
func describeName(exp, child map[string]any) string {
	name, _ := nested(child, "metadata", "name").(string)
	if n, ok := nested(exp, "metadata", "name").(string); ok {
		name = n
	}
	if ns, _ := nested(child, "metadata", "namespace").(string); ns != "" {
		return ns + "/" + name
	}
	return name
}

func nested(m map[string]any, fields ...string) any {
	var v any = m
	for _, f := range fields {
		mm, ok := v.(map[string]any)
		if !ok {
			return nil
		}
		v = mm[f]
	}
	return v
}

func asMap(v any) map[string]any {
	m, _ := v.(map[string]any)
	return m
}

// copyMap is a shallow copy of m (an empty map for nil).
func copyMap(m map[string]any) map[string]any {
	out := make(map[string]any, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}
