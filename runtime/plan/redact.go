package plan

import (
	"encoding/base64"
	"sort"
	"strings"
	"sync"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// A plan is printed, often into a CI log that more people read than may read the cluster's
// Secrets, so no Secret data may reach it: not through a desired child's fields, a status
// field, a validation message, nor a dry run's error that echoes a value. Two rules, each for
// what the other cannot see:
//   - the fields data and stringData of a Secret child are shown as changed, never their values;
//   - every value of a Secret the plan read (related objects, children), as stored (base64) and
//     decoded, is replaced wherever it appears in the plan's text.

// redacted stands for Secret data in a plan.
const redacted = "<redacted>"

// minSecretLen is the shortest Secret value replaced in text: shorter ones ("1", "on") would
// blank out unrelated words, and say little.
const minSecretLen = 4

// secrets are the Secret values a plan read.
type secrets struct {
	mu     sync.Mutex
	values map[string]bool
}

// note keeps the data of objs that are Secrets.
func (s *secrets) note(objs ...*unstructured.Unstructured) {
	for _, obj := range objs {
		if !isSecret(obj.GetAPIVersion(), obj.GetKind()) {
			continue
		}
		for _, field := range []string{"data", "stringData"} {
			m, _, _ := unstructured.NestedMap(obj.Object, field)
			for _, v := range m {
				if str, ok := v.(string); ok {
					s.add(str)
					if field == "data" {
						if decoded, err := base64.StdEncoding.DecodeString(str); err == nil {
							s.add(string(decoded))
						}
					}
				}
			}
		}
	}
}

func (s *secrets) add(v string) {
	if len(v) < minSecretLen {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.values == nil {
		s.values = map[string]bool{}
	}
	s.values[v] = true
}

// replacer replaces every value kept, longest first (a value holding another is replaced whole).
func (s *secrets) replacer() *strings.Replacer {
	s.mu.Lock()
	defer s.mu.Unlock()
	vals := make([]string, 0, len(s.values))
	for v := range s.values {
		vals = append(vals, v)
	}
	sort.Slice(vals, func(i, j int) bool { return len(vals[i]) > len(vals[j]) })
	pairs := make([]string, 0, 2*len(vals))
	for _, v := range vals {
		pairs = append(pairs, v, redacted)
	}
	return strings.NewReplacer(pairs...)
}

func isSecret(apiVersion, kind string) bool { return apiVersion == "v1" && kind == "Secret" }

// redact removes Secret data from the parents of a plan.
func redact(parents []Parent, s *secrets) {
	r := s.replacer()
	for i := range parents {
		p := &parents[i]
		p.Error = r.Replace(p.Error)
		redactFields(p.Status, r, false)
		for j := range p.Children {
			c := &p.Children[j]
			c.Why, c.DryRunError = r.Replace(c.Why), r.Replace(c.DryRunError)
			redactFields(c.Fields, r, isSecret(c.APIVersion, c.Kind))
		}
	}
}

// redactFields replaces the Secret values in field changes; of a Secret child, the values of
// its data and stringData fields whole.
func redactFields(fields []FieldChange, r *strings.Replacer, secret bool) {
	for i := range fields {
		f := &fields[i]
		if secret && (f.Path == "data" || f.Path == "stringData" || strings.HasPrefix(f.Path, "data.") || strings.HasPrefix(f.Path, "stringData.")) {
			f.Old, f.New = redactWhole(f.Old), redactWhole(f.New)
			continue
		}
		f.Old, f.New = redactValue(f.Old, r), redactValue(f.New, r)
	}
}

func redactWhole(v any) any {
	if v == nil {
		return nil
	}
	return redacted
}

// redactValue replaces the Secret values in the strings of v, a JSON-like value, in a copy.
func redactValue(v any, r *strings.Replacer) any {
	switch v := v.(type) {
	case string:
		return r.Replace(v)
	case map[string]any:
		out := make(map[string]any, len(v))
		for k, e := range v {
			out[k] = redactValue(e, r)
		}
		return out
	case []any:
		out := make([]any, len(v))
		for i, e := range v {
			out[i] = redactValue(e, r)
		}
		return out
	}
	return v
}
