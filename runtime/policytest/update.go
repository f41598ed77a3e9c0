package policytest

import (
	"bytes"
	"fmt"
	"os"
	"slices"

	"go.yaml.in/yaml/v3"
)

// expectKeys are the keys of an expectation that check something, in the order a recording
// writes them.
var expectKeys = []string{"error", "children", "status", "changes"}

// record rewrites the step's expectation so that the step passes with what it gave (recorded),
// in the file: the keys kept keep their place, their comments and their flow or block style.
func (s *Step) record(got *outcome) {
	exp := recorded(s.Expect, got)
	var old *yaml.Node
	for i := 0; i+1 < len(s.node.Content); i += 2 {
		if s.node.Content[i].Value == "expect" {
			old = s.node.Content[i+1]
			s.node.Content[i+1] = exp.node(old)
		}
	}
	if old == nil {
		s.node.Content = append(s.node.Content, &yaml.Node{Kind: yaml.ScalarNode, Value: "expect"}, exp.node(nil))
	}
	s.Expect = exp
}

// recorded is the expectation a step that gave got passes with. A step without one records all
// it gave, exactly: the children, status and changes of a sync that succeeded; the error (and the
// status written with it) of one that failed. A step with one keeps its match mode and the keys it
// checks, each with what the step gave, in the expectation's terms (authorsTerms: a child's id,
// its name pattern, a Secret's stringData); with match: subset, cut down to the keys and items the
// expectation gives (recordSubset: a subset stays a subset, no field the author left out is
// added). It gains the error when the step failed, and loses it when the step succeeded.
func recorded(old *Expect, got *outcome) *Expect {
	if old == nil {
		return recordAll(got)
	}
	e := &Expect{Match: old.Match, Has: map[string]bool{}, Line: old.Line}
	if got.err != nil {
		e.Has["error"], e.Error = true, got.errText
	}
	for _, key := range []string{"children", "status", "changes"} {
		if !old.Has[key] || (key == "status" && got.status == nil) {
			continue
		}
		e.Has[key] = true
		want, have := normalize(old.value(key)), normalize(got.value(key))
		if key == "children" {
			have, _ = authorsTerms(want, have)
		}
		if old.Match == MatchSubset {
			have = recordSubset(want, have, key == "children")
		}
		e.set(key, have)
	}
	if len(e.Has) == 0 || compare(e, got) != "" {
		all := recordAll(got)
		all.Line = old.Line
		return all
	}
	return e
}

func recordAll(got *outcome) *Expect {
	e := &Expect{Match: MatchExact, Has: map[string]bool{}}
	if got.err != nil {
		e.Has["error"], e.Error = true, got.errText
		if got.status != nil {
			e.Has["status"], e.Status = true, got.status
		}
		return e
	}
	for _, key := range []string{"children", "status", "changes"} {
		e.Has[key] = true
		e.set(key, got.value(key))
	}
	return e
}

func (e *Expect) value(key string) any {
	switch key {
	case "children":
		return e.Children
	case "status":
		return e.Status
	case "changes":
		return e.Changes
	}
	return e.Error
}

func (e *Expect) set(key string, v any) {
	v = normalize(v)
	switch key {
	case "children":
		e.Children, _ = v.([]any)
		if e.Children == nil {
			e.Children = []any{}
		}
	case "status":
		e.Status, _ = v.(map[string]any)
	case "changes":
		e.Changes = nil
		for _, c := range asSlice(v) {
			s, _ := c.(string)
			e.Changes = append(e.Changes, s)
		}
		if e.Changes == nil {
			e.Changes = []string{}
		}
	case "error":
		e.Error, _ = v.(string)
	}
}

func asSlice(v any) []any {
	s, _ := v.([]any)
	return s
}

func (o *outcome) value(key string) any {
	switch key {
	case "children":
		return o.children
	case "status":
		return o.status
	case "changes":
		return o.changes
	}
	return o.errText
}

// node writes the expectation as YAML in the place of old (nil: none): match and the keys old
// has come first, in their order, with their comments and style; the others follow.
func (e *Expect) node(old *yaml.Node) *yaml.Node {
	out := &yaml.Node{Kind: yaml.MappingNode}
	olds := map[string][2]*yaml.Node{}
	var order []string
	if old != nil && old.Kind == yaml.MappingNode {
		out.HeadComment, out.LineComment, out.FootComment = old.HeadComment, old.LineComment, old.FootComment
		for i := 0; i+1 < len(old.Content); i += 2 {
			k := old.Content[i].Value
			olds[k] = [2]*yaml.Node{old.Content[i], old.Content[i+1]}
			order = append(order, k)
		}
	}
	if e.Match == MatchSubset && !slices.Contains(order, "match") {
		order = append([]string{"match"}, order...)
	}
	for _, k := range expectKeys {
		if !slices.Contains(order, k) {
			order = append(order, k)
		}
	}
	for _, k := range order {
		var val *yaml.Node
		switch {
		case k == "match" && e.Match == MatchExact && olds[k][0] == nil:
			continue // the default, not given
		case k == "match":
			val = &yaml.Node{Kind: yaml.ScalarNode, Value: e.Match}
		case e.Has[k]:
			val = &yaml.Node{}
			if err := val.Encode(normalize(e.value(k))); err != nil {
				continue
			}
		default:
			continue
		}
		key := &yaml.Node{Kind: yaml.ScalarNode, Value: k}
		if prev, ok := olds[k]; ok {
			key = prev[0]
			carryStyle(prev[1], val)
			val.HeadComment, val.LineComment, val.FootComment = prev[1].HeadComment, prev[1].LineComment, prev[1].FootComment
		}
		out.Content = append(out.Content, key, val)
	}
	if old != nil && flowStays(old, out) {
		out.Style = yaml.FlowStyle
	}
	return out
}

// maxFlow is the longest value (in characters) that stays in the flow style of the one it replaces.
const maxFlow = 100

// flowStays says whether a value keeps the flow style of the value it replaces: when that was a
// list or object the author wrote in flow style (not an empty one, which has no other), and the
// new one is short enough to read on one line.
func flowStays(prev, val *yaml.Node) bool {
	if prev.Style&yaml.FlowStyle == 0 || len(prev.Content) == 0 || val.Kind == yaml.ScalarNode {
		return false
	}
	flow := *val
	flow.Style |= yaml.FlowStyle
	text, err := yaml.Marshal(&flow)
	return err == nil && len(bytes.TrimSpace(text)) <= maxFlow
}

// carryStyle gives val the key order and flow style of the parts of prev it replaces: prev itself
// (flowStays), else, inside, the values of the same keys and the items of the same places.
func carryStyle(prev, val *yaml.Node) {
	if val.Kind == yaml.MappingNode && prev.Kind == yaml.MappingNode {
		keyOrder(prev, val)
	}
	if flowStays(prev, val) {
		val.Style |= yaml.FlowStyle // and so is all inside: what follows orders keys only
	}
	switch {
	case val.Kind == yaml.MappingNode && prev.Kind == yaml.MappingNode:
		for i := 0; i+1 < len(val.Content); i += 2 {
			for j := 0; j+1 < len(prev.Content); j += 2 {
				if prev.Content[j].Value == val.Content[i].Value {
					carryStyle(prev.Content[j+1], val.Content[i+1])
				}
			}
		}
	case val.Kind == yaml.SequenceNode && prev.Kind == yaml.SequenceNode:
		for i := range min(len(val.Content), len(prev.Content)) {
			carryStyle(prev.Content[i], val.Content[i])
		}
	}
}

// keyOrder puts the keys of val that prev has first, in prev's order.
func keyOrder(prev, val *yaml.Node) {
	rank := func(k string) int {
		for j := 0; j+1 < len(prev.Content); j += 2 {
			if prev.Content[j].Value == k {
				return j
			}
		}
		return len(prev.Content)
	}
	pairs := make([][2]*yaml.Node, 0, len(val.Content)/2)
	for i := 0; i+1 < len(val.Content); i += 2 {
		pairs = append(pairs, [2]*yaml.Node{val.Content[i], val.Content[i+1]})
	}
	slices.SortStableFunc(pairs, func(a, b [2]*yaml.Node) int { return rank(a[0].Value) - rank(b[0].Value) })
	val.Content = val.Content[:0]
	for _, p := range pairs {
		val.Content = append(val.Content, p[0], p[1])
	}
}

// write saves the file with its recorded expectations; comments and the rest stay.
func (f *File) write() error {
	var b bytes.Buffer
	enc := yaml.NewEncoder(&b)
	enc.SetIndent(2)
	if err := enc.Encode(f.root); err != nil {
		return fmt.Errorf("%s: %w", f.Path, err)
	}
	if err := enc.Close(); err != nil {
		return fmt.Errorf("%s: %w", f.Path, err)
	}
	info, err := os.Stat(f.Path)
	if err != nil {
		return err
	}
	return os.WriteFile(f.Path, b.Bytes(), info.Mode().Perm())
}
