package policy

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"reflect"
	"sort"
	"strings"

	"go.yaml.in/yaml/v3"

	"metacel.dev/metacel/runtime/fieldpath"
	"metacel.dev/metacel/runtime/manifest"
)

// Document is one policy as parsed, with the source positions of its fields.
type Document struct {
	Policy *CompositePolicy
	Source *Source
}

// Parse reads every policy in data: bare CompositePolicy documents, or ConfigMaps whose data
// values hold them. file names the source in errors. Empty documents are skipped. All errors
// are returned together, as an ErrorList.
func Parse(file string, data []byte) ([]*Document, error) {
	var docs []*Document
	var errs ErrorList
	parseStream(file, data, origin{text: data}, &docs, &errs, true)
	if len(errs) > 0 {
		return docs, errs
	}
	return docs, nil
}

// origin places a stream in its file: its first line is line+1 of file, and its lines are
// indented column spaces more there (a ConfigMap's block scalar).
type origin struct {
	line, column int
	// text is the whole file's.
	text []byte
}

// parseStream decodes the YAML documents of data, which lies at at in file.
func parseStream(file string, data []byte, at origin, docs *[]*Document, errs *ErrorList, allowConfigMap bool) {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	for {
		var root yaml.Node
		err := dec.Decode(&root)
		if errors.Is(err, io.EOF) {
			return
		}
		if err != nil {
			*errs = append(*errs, yamlError(file, data, at, err))
			return
		}
		shift(&root, at.line)
		if len(root.Content) == 0 || isNull(resolve(root.Content[0])) {
			continue
		}
		parseDocument(file, resolve(root.Content[0]), at.text, docs, errs, allowConfigMap)
	}
}

func parseDocument(file string, n *yaml.Node, text []byte, docs *[]*Document, errs *ErrorList, allowConfigMap bool) {
	src := &Source{File: file, Line: n.Line, lines: map[string]int{}}
	if n.Kind != yaml.MappingNode {
		*errs = append(*errs, src.Errorf("", "expected a CompositePolicy or a ConfigMap holding policies, got %s", describe(n)))
		return
	}
	apiVersion, kind := scalarField(n, "apiVersion"), scalarField(n, "kind")
	if allowConfigMap && apiVersion == "v1" && kind == "ConfigMap" {
		parseConfigMap(file, n, text, docs, errs)
		return
	}
	if apiVersion != APIVersion || kind != Kind {
		*errs = append(*errs, src.Errorf("", "expected apiVersion %q and kind %q (or a v1 ConfigMap holding policies), got apiVersion %q and kind %q",
			APIVersion, Kind, apiVersion, kind))
		return
	}
	d := &decoder{src: src}
	p := &CompositePolicy{}
	d.decode(n, reflect.ValueOf(p).Elem(), "")
	if len(d.errs) > 0 {
		*errs = append(*errs, d.errs...)
		return
	}
	*docs = append(*docs, &Document{Policy: p, Source: src})
}

// parseConfigMap parses every data value of a ConfigMap as a stream of policies, keeping the
// line numbers (and, in block scalars, the columns) of the enclosing file, whose text is text.
func parseConfigMap(file string, n *yaml.Node, text []byte, docs *[]*Document, errs *ErrorList) {
	data := mappingField(n, "data")
	if data == nil || data.Kind != yaml.MappingNode {
		*errs = append(*errs, &FieldError{File: file, Line: n.Line, Path: "data", Msg: "a policy ConfigMap needs data values holding CompositePolicy documents"})
		return
	}
	type entry struct {
		key string
		val *yaml.Node
	}
	var entries []entry
	for i := 0; i+1 < len(data.Content); i += 2 {
		entries = append(entries, entry{data.Content[i].Value, resolve(data.Content[i+1])})
	}
	sort.SliceStable(entries, func(i, j int) bool { return entries[i].key < entries[j].key })
	for _, e := range entries {
		if e.val.Kind != yaml.ScalarNode {
			*errs = append(*errs, &FieldError{File: file, Line: e.val.Line, Path: fieldpath.Field("data", e.key), Msg: "expected a string holding policy YAML"})
			continue
		}
		at := origin{line: e.val.Line - 1, text: text}
		if e.val.Style&(yaml.LiteralStyle|yaml.FoldedStyle) != 0 {
			at.line = e.val.Line // a block scalar's text starts on the next line
			at.column = blockIndent(text, at.line) - indentOf(firstLine(e.val.Value))
		}
		parseStream(file, []byte(e.val.Value), at, docs, errs, false)
	}
}

func scalarField(n *yaml.Node, key string) string {
	if v := mappingField(n, key); v != nil && v.Kind == yaml.ScalarNode {
		return v.Value
	}
	return ""
}

func mappingField(n *yaml.Node, key string) *yaml.Node {
	for i := 0; i+1 < len(n.Content); i += 2 {
		if n.Content[i].Value == key {
			return resolve(n.Content[i+1])
		}
	}
	return nil
}

// shift moves every line of a node tree down by offset.
func shift(n *yaml.Node, offset int) {
	if offset == 0 || n == nil {
		return
	}
	n.Line += offset
	for _, c := range n.Content {
		shift(c, offset)
	}
}

// yamlError locates a YAML error of data, which lies at at in file, at its mistake.
func yamlError(file string, data []byte, at origin, err error) *FieldError {
	var te *yaml.TypeError
	if errors.As(err, &te) {
		return &FieldError{File: file, Line: at.line + 1, Msg: te.Error()}
	}
	if se := manifest.LocateSyntaxError(data, err, decodeAll); se != nil {
		se.Shift(at.line, at.column)
		return &FieldError{File: file, Line: se.Line, Column: se.Column, Msg: "invalid YAML: " + se.Message()}
	}
	line, msg := splitYAMLError(err.Error())
	return &FieldError{File: file, Line: line + at.line, Msg: "invalid YAML: " + msg}
}

// decodeAll decodes every document of data, as parseStream does, and returns the first error.
func decodeAll(data []byte) error {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	for {
		var root yaml.Node
		if err := dec.Decode(&root); err != nil {
			if errors.Is(err, io.EOF) {
				return nil
			}
			return err
		}
	}
}

// splitYAMLError reads the line out of a YAML syntax error ("yaml: line 5: did not find ...").
func splitYAMLError(s string) (int, string) {
	s = strings.TrimPrefix(s, "yaml: ")
	var line int
	if n, _ := fmt.Sscanf(s, "line %d:", &line); n == 1 {
		if _, rest, ok := strings.Cut(s, ": "); ok {
			return line, rest
		}
	}
	return 1, s
}

// blockIndent returns the indentation of the first non-blank line of text after line (the
// content of a block scalar whose header is on that line), or 0.
func blockIndent(text []byte, line int) int {
	lines := strings.Split(string(text), "\n")
	for i := line; i < len(lines); i++ {
		if strings.TrimSpace(lines[i]) != "" {
			return indentOf(lines[i])
		}
	}
	return 0
}

// firstLine returns the first non-blank line of s.
func firstLine(s string) string {
	for l := range strings.SplitSeq(s, "\n") {
		if strings.TrimSpace(l) != "" {
			return l
		}
	}
	return ""
}

func indentOf(line string) int { return len(line) - len(strings.TrimLeft(line, " ")) }
