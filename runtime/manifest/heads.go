package manifest

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"strings"

	"go.yaml.in/yaml/v3"
)

// Head is what the top of one YAML document says it is: an object's apiVersion, kind and name,
// or, for a document that is no object (a metacel test file), its top-level keys.
type Head struct {
	APIVersion, Kind, Namespace, Name string
	// Keys are the document's top-level keys, in order.
	Keys []string
	// Labels are the object's labels that are strings.
	Labels map[string]string
	// Data is a ConfigMap's data: the values that are strings.
	Data map[string]string
}

// IsObject reports whether the document is a Kubernetes object: it has an apiVersion or a kind.
func (h Head) IsObject() bool { return h.APIVersion != "" || h.Kind != "" }

// String names the document as an error names an object: "Kind namespace/name", or "a YAML
// document with keys k1, k2" for one that is no object.
func (h Head) String() string {
	if !h.IsObject() && len(h.Keys) == 0 {
		return "a YAML document that is not a mapping"
	}
	if !h.IsObject() {
		return "a YAML document with keys " + strings.Join(h.Keys, ", ")
	}
	name := h.Name
	if h.Namespace != "" {
		name = h.Namespace + "/" + name
	}
	return strings.TrimSpace(h.Kind + " " + name)
}

// ReadHeads reads the head of every document of a file, skipping empty ones: enough to tell a
// policy from a CRD, a sample or a test file without decoding them. A file that is not YAML is an
// error.
func ReadHeads(file string) ([]Head, error) {
	data, err := ReadInput(file)
	if err != nil {
		return nil, err
	}
	heads, err := Heads(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", file, err)
	}
	return heads, nil
}

// Documents returns the top node of every document of a YAML or JSON stream, skipping empty ones.
func Documents(data []byte) ([]*yaml.Node, error) {
	var out []*yaml.Node
	dec := yaml.NewDecoder(bytes.NewReader(data))
	for {
		var root yaml.Node
		err := dec.Decode(&root)
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return nil, err
		}
		if len(root.Content) > 0 {
			out = append(out, root.Content[0])
		}
	}
}

// Heads reads the head of every document of a YAML or JSON stream, skipping empty ones: only
// the fields of a head are decoded, so that a mistake elsewhere in an object (a duplicate key in
// its spec) leaves it what it is, for the reader of the object to report.
func Heads(data []byte) ([]Head, error) {
	docs, err := Documents(data)
	if err != nil {
		return nil, err
	}
	var out []Head
	for _, n := range docs {
		if n.Kind != yaml.MappingNode {
			if n.Tag != "!!null" {
				out = append(out, Head{})
			}
			continue
		}
		var h Head
		doc := map[string]any{}
		for i := 0; i+1 < len(n.Content); i += 2 {
			key := n.Content[i].Value
			h.Keys = append(h.Keys, key)
			switch key {
			case "apiVersion", "kind", "metadata", "data":
				var v any
				if err := n.Content[i+1].Decode(&v); err != nil {
					return nil, err
				}
				doc[key] = v
			}
		}
		meta, _ := doc["metadata"].(map[string]any)
		h.APIVersion, h.Kind = str(doc["apiVersion"]), str(doc["kind"])
		h.Name, h.Namespace = str(meta["name"]), str(meta["namespace"])
		h.Labels, h.Data = stringValues(meta["labels"]), stringValues(doc["data"])
		out = append(out, h)
	}
	return out, nil
}

// stringValues returns the entries of a map that are strings; nil when v is no map.
func stringValues(v any) map[string]string {
	m, ok := v.(map[string]any)
	if !ok {
		return nil
	}
	out := make(map[string]string, len(m))
	for k, v := range m {
		if s, ok := v.(string); ok {
			out[k] = s
		}
	}
	return out
}

func str(v any) string {
	s, _ := v.(string)
	return s
}

// Describe names what a file's documents are, for a note: "CompositePolicy myapp", "2 objects:
// CustomResourceDefinition myapps.demo.rtfm.co.ua, MyApp default/example-app", "no document".
func Describe(heads []Head) string {
	switch len(heads) {
	case 0:
		return "no document"
	case 1:
		return heads[0].String()
	}
	names := make([]string, 0, 3)
	for i, h := range heads {
		if i == 3 {
			names = append(names, "…")
			break
		}
		names = append(names, h.String())
	}
	return fmt.Sprintf("%d documents: %s", len(heads), strings.Join(names, ", "))
}
