package policytest

import (
	"bytes"
	"fmt"
	"os"

	"go.yaml.in/yaml/v3"
)

// record replaces the step's expectation with what it gave, exactly: the children, status and
// changes of a sync that succeeded; the error (and the status written with it) of one that failed.
func (s *Step) record(got *outcome) {
	exp := &yaml.Node{Kind: yaml.MappingNode}
	add := func(key string, v any) {
		var val yaml.Node
		if err := val.Encode(normalize(v)); err != nil {
			return
		}
		exp.Content = append(exp.Content, &yaml.Node{Kind: yaml.ScalarNode, Value: key}, &val)
	}
	if got.err != nil {
		add("error", got.errText)
		if got.status != nil {
			add("status", got.status)
		}
	} else {
		add("children", got.children)
		add("status", got.status)
		add("changes", got.changes)
	}
	for i := 0; i+1 < len(s.node.Content); i += 2 {
		if s.node.Content[i].Value == "expect" {
			s.node.Content[i+1] = exp
			return
		}
	}
	s.node.Content = append(s.node.Content, &yaml.Node{Kind: yaml.ScalarNode, Value: "expect"}, exp)
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
