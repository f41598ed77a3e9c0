package policy

import (
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
	"k8s.io/apimachinery/pkg/util/intstr"

	"metacel.dev/metacel/runtime/fieldpath"
)

// decoder fills Go values from a yaml.Node tree, strictly: unknown fields, wrong types and duplicate
// keys are errors. It records the line of every field path it visits, so that later steps
// (validation, compilation) can point at the line of a field.
type decoder struct {
	src  *Source
	errs ErrorList
	// depth and visited bound the walk, so that aliases cannot make it endless or explosive
	depth, visited int
}

// Bounds of one document: deeper nesting or more nodes (through aliases) is an error.
const (
	maxDepth = 64
	maxNodes = 100_000
)

// enter counts a node and reports false, with an error, past the bounds.
func (d *decoder) enter(n *yaml.Node, path string) bool {
	d.visited++
	if d.depth >= maxDepth || d.visited > maxNodes {
		if d.visited == maxNodes+1 || d.depth == maxDepth {
			d.errorf(n, path, "document too deep or too large (more than %d levels or %d nodes, counting aliases)", maxDepth, maxNodes)
		}
		return false
	}
	d.depth++
	return true
}

func (d *decoder) errorf(n *yaml.Node, path, format string, args ...any) {
	d.errs = append(d.errs, &FieldError{File: d.src.File, Line: n.Line, Path: path, Msg: fmt.Sprintf(format, args...)})
}

func (d *decoder) mark(n *yaml.Node, path string) {
	if _, ok := d.src.lines[path]; !ok {
		d.src.lines[path] = n.Line
	}
}

func resolve(n *yaml.Node) *yaml.Node {
	for i := 0; n.Kind == yaml.AliasNode && n.Alias != nil && i < maxDepth; i++ {
		n = n.Alias
	}
	return n
}

func isNull(n *yaml.Node) bool { return n.Kind == yaml.ScalarNode && n.Tag == "!!null" }

// describe names a node's type the way a person reads the YAML.
func describe(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "an object"
	case yaml.SequenceNode:
		return "a list"
	}
	switch n.Tag {
	case "!!str":
		return "a string"
	case "!!int":
		return "an integer"
	case "!!float":
		return "a number"
	case "!!bool":
		return "a boolean"
	case "!!null":
		return "null"
	}
	return n.Tag
}

// decode fills v (addressable) from n.
func (d *decoder) decode(n *yaml.Node, v reflect.Value, path string) {
	if !d.enter(n, path) {
		return
	}
	defer func() { d.depth-- }()
	n = resolve(n)
	d.mark(n, path)
	if isNull(n) && v.Kind() != reflect.Interface {
		return // null leaves the zero value, as with JSON
	}
	if v.Type() == intOrStringType {
		d.decodeIntOrString(n, v, path)
		return
	}
	switch v.Kind() {
	case reflect.Pointer:
		v.Set(reflect.New(v.Type().Elem()))
		d.decode(n, v.Elem(), path)
	case reflect.Struct:
		d.decodeStruct(n, v, path)
	case reflect.Map:
		d.decodeMap(n, v, path)
	case reflect.Slice:
		d.decodeSlice(n, v, path)
	case reflect.Interface:
		if x := d.freeform(n, path); x != nil {
			v.Set(reflect.ValueOf(x))
		}
	default:
		d.decodeScalar(n, v, path)
	}
}

func (d *decoder) decodeStruct(n *yaml.Node, v reflect.Value, path string) {
	if n.Kind != yaml.MappingNode {
		d.errorf(n, path, "expected an object, got %s", describe(n))
		return
	}
	fields := jsonFields(v.Type())
	d.eachKey(n, path, func(key string, kn, vn *yaml.Node) {
		idx, ok := fields[key]
		if !ok {
			d.errorf(kn, fieldpath.Field(path, key), "unknown field %q%s", key, suggest(key, fields))
			return
		}
		d.mark(kn, fieldpath.Field(path, key)) // a field is where its key is
		d.decode(vn, v.Field(idx), fieldpath.Field(path, key))
	})
}

func (d *decoder) decodeMap(n *yaml.Node, v reflect.Value, path string) {
	if n.Kind != yaml.MappingNode {
		d.errorf(n, path, "expected an object, got %s", describe(n))
		return
	}
	m := reflect.MakeMapWithSize(v.Type(), len(n.Content)/2)
	d.eachKey(n, path, func(key string, _, vn *yaml.Node) {
		ev := reflect.New(v.Type().Elem()).Elem()
		d.decode(vn, ev, fieldpath.Field(path, key))
		m.SetMapIndex(reflect.ValueOf(key).Convert(v.Type().Key()), ev)
	})
	v.Set(m)
}

func (d *decoder) decodeSlice(n *yaml.Node, v reflect.Value, path string) {
	if n.Kind != yaml.SequenceNode {
		d.errorf(n, path, "expected a list, got %s", describe(n))
		return
	}
	s := reflect.MakeSlice(v.Type(), len(n.Content), len(n.Content))
	for i, en := range n.Content {
		d.decode(en, s.Index(i), fieldpath.Index(path, i))
	}
	v.Set(s)
}

func (d *decoder) decodeScalar(n *yaml.Node, v reflect.Value, path string) {
	if n.Kind != yaml.ScalarNode {
		d.errorf(n, path, "expected %s, got %s", kindName(v.Kind()), describe(n))
		return
	}
	switch v.Kind() {
	case reflect.String:
		if n.Tag != "!!str" {
			d.errorf(n, path, "expected a string, got %s (quote it: %q)", describe(n), n.Value)
			return
		}
		v.SetString(n.Value)
	case reflect.Bool:
		b, err := strconv.ParseBool(n.Value)
		if n.Tag != "!!bool" || err != nil {
			d.errorf(n, path, "expected a boolean (true or false), got %s", describe(n))
			return
		}
		v.SetBool(b)
	case reflect.Int, reflect.Int32, reflect.Int64:
		i, err := strconv.ParseInt(n.Value, 0, v.Type().Bits())
		if n.Tag != "!!int" || err != nil {
			d.errorf(n, path, "expected an integer, got %s %q", describe(n), n.Value)
			return
		}
		v.SetInt(i)
	default:
		d.errorf(n, path, "cannot decode into %s", v.Type())
	}
}

var intOrStringType = reflect.TypeFor[intstr.IntOrString]()

// decodeIntOrString fills an intstr.IntOrString from an integer or a string (a percentage, such
// as "10%", is checked by Validate).
func (d *decoder) decodeIntOrString(n *yaml.Node, v reflect.Value, path string) {
	const want = `expected an integer or a percentage string such as "10%%"`
	if n.Kind != yaml.ScalarNode {
		d.errorf(n, path, want+", got %s", describe(n))
		return
	}
	switch n.Tag {
	case "!!str":
		v.Set(reflect.ValueOf(intstr.FromString(n.Value)))
		return
	case "!!int":
		if i, err := strconv.ParseInt(n.Value, 0, 32); err == nil {
			v.Set(reflect.ValueOf(intstr.FromInt32(int32(i))))
			return
		}
	}
	d.errorf(n, path, want+", got %s %q", describe(n), n.Value)
}

func kindName(k reflect.Kind) string {
	switch k {
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "a boolean"
	default:
		return "an integer"
	}
}

// eachKey calls fn for every key of a mapping, rejecting non-string and duplicate keys.
func (d *decoder) eachKey(n *yaml.Node, path string, fn func(key string, kn, vn *yaml.Node)) {
	seen := make(map[string]int, len(n.Content)/2)
	for i := 0; i+1 < len(n.Content); i += 2 {
		kn, vn := resolve(n.Content[i]), n.Content[i+1]
		if kn.Kind != yaml.ScalarNode || kn.Tag == "!!null" {
			d.errorf(kn, path, "keys must be strings, got %s", describe(kn))
			continue
		}
		if kn.Tag == "!!merge" {
			d.errorf(kn, path, "YAML merge keys (<<) are not supported")
			continue
		}
		if first, dup := seen[kn.Value]; dup {
			d.errorf(kn, fieldpath.Field(path, kn.Value), "duplicate key %q (first at line %d)", kn.Value, first)
			continue
		}
		seen[kn.Value] = kn.Line
		fn(kn.Value, kn, vn)
	}
}

// freeform turns a node into plain JSON-like Go values: map[string]any, []any, string, int64,
// float64, bool and nil, as apimachinery's unstructured objects hold them.
func (d *decoder) freeform(n *yaml.Node, path string) any {
	if !d.enter(n, path) {
		return nil
	}
	defer func() { d.depth-- }()
	n = resolve(n)
	d.mark(n, path)
	switch n.Kind {
	case yaml.MappingNode:
		m := make(map[string]any, len(n.Content)/2)
		d.eachKey(n, path, func(key string, kn, vn *yaml.Node) {
			d.mark(kn, fieldpath.Field(path, key)) // a block value starts a line below its key
			m[key] = d.freeform(vn, fieldpath.Field(path, key))
		})
		return m
	case yaml.SequenceNode:
		l := make([]any, len(n.Content))
		for i, en := range n.Content {
			l[i] = d.freeform(en, fieldpath.Index(path, i))
		}
		return l
	case yaml.ScalarNode:
		return d.scalar(n, path)
	}
	d.errorf(n, path, "unsupported YAML node")
	return nil
}

func (d *decoder) scalar(n *yaml.Node, path string) any {
	var out any
	if err := n.Decode(&out); err != nil {
		d.errorf(n, path, "%v", err)
		return nil
	}
	switch x := out.(type) {
	case int:
		return int64(x)
	case uint64:
		d.errorf(n, path, "integer %s is too large", n.Value)
		return nil
	case string, int64, float64, bool, nil:
		return x
	}
	// timestamps and binary: keep the text, as JSON would
	return n.Value
}

// jsonFields maps the JSON names of a struct's fields to their index.
func jsonFields(t reflect.Type) map[string]int {
	out := make(map[string]int, t.NumField())
	for i := range t.NumField() {
		name, _, _ := strings.Cut(t.Field(i).Tag.Get("json"), ",")
		if name != "" && name != "-" {
			out[name] = i
		}
	}
	return out
}

// suggest proposes the known field closest to a misspelt one: ` (did you mean "x"?)`, or "".
func suggest(key string, fields map[string]int) string {
	return fieldpath.DidYouMean(key, slices.Collect(maps.Keys(fields)))
}
