package manifest

import (
	"bytes"
	"errors"
	"fmt"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/yaml"
)

// ReadFile reads every object of a file.
func ReadFile(file string) ([]*unstructured.Unstructured, error) {
	data, err := ReadInput(file)
	if err != nil {
		return nil, err
	}
	objs, err := read(data)
	var se *SyntaxError
	switch {
	case errors.As(err, &se):
		return nil, fmt.Errorf("%s:%w", file, err) // file:line:column: invalid YAML: ...
	case err != nil:
		return nil, fmt.Errorf("%s: %w", file, err)
	}
	return objs, nil
}

// read reads every object of a YAML or JSON stream. A YAML syntax error is a *SyntaxError that
// locates the mistake in data.
func read(data []byte) ([]*unstructured.Unstructured, error) {
	var out []*unstructured.Unstructured
	docs, err := splitDocuments(data)
	if err != nil {
		return nil, err
	}
	for _, d := range docs {
		if se := duplicateKey(d.text); se != nil {
			se.Shift(d.line-1, 0)
			return nil, se
		}
		js, err := yaml.YAMLToJSON(d.text)
		if err != nil {
			if se := LocateSyntaxError(d.text, err, parseYAML); se != nil {
				se.Shift(d.line-1, 0)
				return nil, se
			}
			return nil, err
		}
		if t := bytes.TrimSpace(js); len(t) == 0 || string(t) == "null" {
			continue
		}
		obj, err := runtime.Decode(unstructured.UnstructuredJSONScheme, js)
		if err != nil {
			return nil, err
		}
		switch o := obj.(type) {
		case *unstructured.Unstructured:
			out = append(out, o)
		case *unstructured.UnstructuredList:
			for i := range o.Items {
				out = append(out, &o.Items[i])
			}
		}
	}
	return out, nil
}

// parseYAML reports the error of converting doc, for LocateSyntaxError.
func parseYAML(doc []byte) error {
	_, err := yaml.YAMLToJSON(doc)
	return err
}

// document is one YAML document of a stream and the line of the stream it starts at.
type document struct {
	text []byte
	line int
}

// splitDocuments cuts a stream at its "---" lines, as apimachinery's YAMLReader does (a separator
// may be followed by a comment only), keeping the line each document starts at.
func splitDocuments(data []byte) ([]document, error) {
	var docs []document
	start, startLine := 0, 1
	line := 1
	for off := 0; off < len(data); line++ {
		end := len(data)
		if i := bytes.IndexByte(data[off:], '\n'); i >= 0 {
			end = off + i + 1
		}
		if text := data[off:end]; bytes.HasPrefix(text, []byte("---")) {
			rest := bytes.TrimSpace(text[3:])
			if len(rest) > 0 && rest[0] != '#' {
				return nil, fmt.Errorf("line %d: invalid YAML document separator: %s", line, rest)
			}
			docs = appendDocument(docs, data[start:off], startLine)
			start, startLine = end, line+1
		}
		off = end
	}
	return appendDocument(docs, data[start:], startLine), nil
}

func appendDocument(docs []document, text []byte, line int) []document {
	if len(bytes.TrimSpace(text)) == 0 {
		return docs
	}
	return append(docs, document{text: text, line: line})
}
