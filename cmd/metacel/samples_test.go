package main

import (
	"testing"

	"go.yaml.in/yaml/v3"
)

// TestAFieldPathIsAtTheLineOfItsKey places the paths the API server names fields by in a sample.
func TestAFieldPathIsAtTheLineOfItsKey(t *testing.T) {
	const doc = `apiVersion: example.com/v1
kind: Lamp
metadata:
  name: hall
  labels:
    example.com/room: hall
spec:
  bulbs:
    - watts: 40
    - name: b
      watts: x
`
	var root yaml.Node
	if err := yaml.Unmarshal([]byte(doc), &root); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, path string
		line       int
	}{
		{"a field by its key", "metadata.name", 4},
		{"a map key in brackets", "metadata.labels[example.com/room]", 6},
		{"a list item's field", "spec.bulbs[1].watts", 11},
		{"a list item", "spec.bulbs[0]", 9},
		{"a field the object lacks is at its parent", "spec.color", 7},
		{"an index past the list is at the list", "spec.bulbs[5].watts", 8},
		{"no path is the object", "", 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := lineOf(root.Content[0], tc.path); got != tc.line {
				t.Errorf("lineOf(%q) = %d, want %d", tc.path, got, tc.line)
			}
		})
	}
}
