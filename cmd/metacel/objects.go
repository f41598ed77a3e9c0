package main

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"
)

// readObjects reads every Kubernetes object of a YAML or JSON file; a List is expanded.
func readObjects(file string) ([]*unstructured.Unstructured, error) {
	data, err := os.ReadFile(file)
	if err != nil {
		return nil, err
	}
	var out []*unstructured.Unstructured
	r := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
	for {
		doc, err := r.Read()
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %w", file, err)
		}
		js, err := yaml.YAMLToJSON(doc)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", file, err)
		}
		if len(bytes.TrimSpace(js)) == 0 || string(bytes.TrimSpace(js)) == "null" {
			continue
		}
		obj, err := runtime.Decode(unstructured.UnstructuredJSONScheme, js)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", file, err)
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
}

// readAll reads the objects of several files.
func readAll(files []string) ([]*unstructured.Unstructured, error) {
	var out []*unstructured.Unstructured
	for _, f := range files {
		objs, err := readObjects(f)
		if err != nil {
			return nil, err
		}
		out = append(out, objs...)
	}
	return out, nil
}

// writeYAML writes objects as a YAML stream.
func writeYAML(w io.Writer, objs []map[string]any) error {
	for i, o := range objs {
		b, err := yaml.Marshal(o)
		if err != nil {
			return err
		}
		if i > 0 {
			if _, err := io.WriteString(w, "---\n"); err != nil {
				return err
			}
		}
		if _, err := w.Write(b); err != nil {
			return err
		}
	}
	return nil
}
