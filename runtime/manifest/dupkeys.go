package manifest

import (
	"bytes"

	"go.yaml.in/yaml/v3"
)

// duplicateKey finds the first key a mapping of a YAML document holds twice, which sigs.k8s.io/yaml
// reads without a word, the last value winning (a sample parent with two `enabled:` would pass
// with the one the author did not look at): a *SyntaxError at the second, naming the first; nil
// when there is none, or when doc is no YAML (the conversion reports that).
func duplicateKey(doc []byte) *SyntaxError {
	var root yaml.Node
	if err := yaml.NewDecoder(bytes.NewReader(doc)).Decode(&root); err != nil {
		return nil
	}
	return duplicateIn(&root)
}

func duplicateIn(n *yaml.Node) *SyntaxError {
	if n.Kind == yaml.MappingNode {
		first := map[string]int{}
		for i := 0; i+1 < len(n.Content); i += 2 {
			k := n.Content[i]
			if k.Tag == "!!merge" { // <<: may merge several maps, each its own key
				continue
			}
			if line, seen := first[k.Value]; seen && k.Kind == yaml.ScalarNode {
				return &SyntaxError{Line: k.Line, Column: k.Column, Problem: k.Value, kind: duplicate, other: line}
			}
			first[k.Value] = k.Line
		}
	}
	for _, c := range n.Content {
		if e := duplicateIn(c); e != nil {
			return e
		}
	}
	return nil
}
