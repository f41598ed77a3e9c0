package policytest

import (
	"fmt"
	"maps"
	pathpkg "path"
	"path/filepath"
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utiljson "k8s.io/apimachinery/pkg/util/json"
	sigsyaml "sigs.k8s.io/yaml"

	"metacel.dev/metacel/runtime/contract"
	"metacel.dev/metacel/runtime/manifest"
	"metacel.dev/metacel/runtime/policy"
)

// File is one test file: a policy, the CRDs that type it, and its tests.
type File struct {
	Path       string
	Policy     string // the policy file, relative to Path's directory
	PolicyName string // which policy of that file, when it holds several
	// PolicyNamespace is the runtime's policy namespace, where no child may be placed
	// (contract.DefaultPolicyNamespace unless the file says another; "" for none)
	PolicyNamespace string
	CRDs            []string
	Tests           []*Test

	root *yaml.Node // the document, rewritten by Update
}

// Test is one sequence of syncs of one parent.
type Test struct {
	Name string
	Path string // field path in the file, e.g. tests[0]
	Line int
	// Parent, Related and Observed are the world before the first step.
	Parent   Objects
	Related  Objects
	Observed Objects
	Steps    []*Step
}

// Step is one sync: edits of the world, then what the sync must give.
type Step struct {
	Name string
	Path string
	Line int
	// ParentPatch is a JSON merge patch of the parent; Related and Observed change or add objects.
	ParentPatch map[string]any
	Related     Objects
	Observed    Objects
	Expect      *Expect

	node *yaml.Node // the step's mapping, where Update writes expect
}

// Objects are objects given inline or through files.
type Objects struct {
	Items []*unstructured.Unstructured
	// Where locates each item, for errors: file:line: path.
	Where []string
}

// Match modes of an expectation.
const (
	MatchExact  = "exact"
	MatchSubset = "subset"
)

// Expect is what a step must give. A key left out is not checked.
type Expect struct {
	Match    string
	Children []any
	Status   map[string]any
	Changes  []string
	Error    string
	// Has says which of children, status, changes and error are given.
	Has  map[string]bool
	Line int
}

// load reads and checks a test file; every problem is a *policy.FieldError with its line and field
// path, together in a policy.ErrorList.
func load(path string) (*File, error) {
	data, err := manifest.ReadInput(path)
	if err != nil {
		return nil, err
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return nil, &policy.FieldError{File: path, Line: 1, Msg: fmt.Sprintf("invalid YAML: %v", err)}
	}
	d := &decoder{file: path, dir: filepath.Dir(path)}
	f := &File{Path: path, PolicyNamespace: contract.DefaultPolicyNamespace, root: &doc}
	if len(doc.Content) == 0 {
		d.errorf(&doc, "", "empty test file: give policy, crds and tests")
		return nil, d.errs.Err()
	}
	d.topLevel(f, doc.Content[0])
	if err := d.errs.Err(); err != nil {
		return nil, err
	}
	return f, nil
}

// decoder reads a test file's YAML nodes strictly, collecting errors with their lines.
type decoder struct {
	file, dir string
	errs      policy.ErrorList
}

func (d *decoder) errorf(n *yaml.Node, path, format string, args ...any) {
	d.errs = append(d.errs, &policy.FieldError{File: d.file, Line: n.Line, Path: path, Msg: fmt.Sprintf(format, args...)})
}

// fields walks a mapping: each key must be one of fields; the keys of required must be there
// (their values say how to give them).
func (d *decoder) fields(n *yaml.Node, path string, fields map[string]func(v *yaml.Node, path string), required map[string]string) {
	if n.Kind != yaml.MappingNode {
		d.errorf(n, path, "expected an object with %s", strings.Join(slices.Sorted(maps.Keys(fields)), ", "))
		return
	}
	seen := map[string]bool{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		p := join(path, k.Value)
		fn, ok := fields[k.Value]
		switch {
		case !ok:
			d.errorf(k, p, "unknown field %q: use one of %s", k.Value, strings.Join(slices.Sorted(maps.Keys(fields)), ", "))
		case seen[k.Value]:
			d.errorf(k, p, "given twice: keep one")
		default:
			seen[k.Value] = true
			fn(v, p)
		}
	}
	for _, r := range slices.Sorted(maps.Keys(required)) {
		if !seen[r] {
			d.errorf(n, path, "%s is required: %s", r, required[r])
		}
	}
}

// resolve makes a path of the file relative to the test file's directory, unless it is absolute.
func (d *decoder) resolve(path string) string {
	if filepath.IsAbs(path) {
		return path
	}
	return filepath.Join(d.dir, path)
}

func join(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

func (d *decoder) str(n *yaml.Node, path string) string {
	if n.Kind != yaml.ScalarNode || n.Tag == "!!null" {
		d.errorf(n, path, "expected a string")
		return ""
	}
	return n.Value
}

func (d *decoder) strs(n *yaml.Node, path string) []string {
	if n.Kind != yaml.SequenceNode {
		d.errorf(n, path, "expected a list of strings")
		return nil
	}
	out := make([]string, 0, len(n.Content))
	for i, item := range n.Content {
		out = append(out, d.str(item, fmt.Sprintf("%s[%d]", path, i)))
	}
	return out
}

// value decodes a node as kubectl reads YAML (sigs.k8s.io/yaml; integers as int64).
func (d *decoder) value(n *yaml.Node, path string) any {
	text, err := yaml.Marshal(n)
	if err == nil {
		var js []byte
		if js, err = sigsyaml.YAMLToJSON(text); err == nil {
			var v any
			if err = utiljson.Unmarshal(js, &v); err == nil {
				return v
			}
		}
	}
	d.errorf(n, path, "cannot read it: %v", err)
	return nil
}

func (d *decoder) object(n *yaml.Node, path string) map[string]any {
	if n.Kind != yaml.MappingNode {
		d.errorf(n, path, "expected an object")
		return nil
	}
	m, _ := d.value(n, path).(map[string]any)
	return m
}

// objects reads a list whose items are files (a path, relative to the test file; every object of
// the file) or objects inline.
func (d *decoder) objects(n *yaml.Node, path string) Objects {
	var out Objects
	if n.Kind != yaml.SequenceNode {
		d.errorf(n, path, "expected a list of files or objects")
		return out
	}
	for i, item := range n.Content {
		d.source(item, fmt.Sprintf("%s[%d]", path, i), &out)
	}
	return out
}

// source reads one file or one inline object into out.
func (d *decoder) source(n *yaml.Node, path string, out *Objects) {
	where := fmt.Sprintf("%s:%d: %s", d.file, n.Line, path)
	switch n.Kind {
	case yaml.ScalarNode:
		file := d.resolve(n.Value)
		objs, err := manifest.ReadFile(file)
		if err != nil {
			d.errorf(n, path, "%v: give a file relative to this one", err)
			return
		}
		for _, o := range objs {
			out.Items, out.Where = append(out.Items, o), append(out.Where, where+" ("+n.Value+")")
		}
	case yaml.MappingNode:
		m := d.object(n, path)
		obj := &unstructured.Unstructured{Object: m}
		if obj.GetAPIVersion() == "" || obj.GetKind() == "" || obj.GetName() == "" {
			d.errorf(n, path, "an object needs apiVersion, kind and metadata.name")
			return
		}
		out.Items, out.Where = append(out.Items, obj), append(out.Where, where)
	default:
		d.errorf(n, path, "expected a file name or an object")
	}
}

func (d *decoder) topLevel(f *File, n *yaml.Node) {
	d.fields(n, "", map[string]func(*yaml.Node, string){
		"policy":          func(v *yaml.Node, p string) { f.Policy = d.resolve(d.str(v, p)) },
		"policyName":      func(v *yaml.Node, p string) { f.PolicyName = d.str(v, p) },
		"policyNamespace": func(v *yaml.Node, p string) { f.PolicyNamespace = d.str(v, p) },
		"crds": func(v *yaml.Node, p string) {
			for _, c := range d.strs(v, p) {
				f.CRDs = append(f.CRDs, d.resolve(c))
			}
		},
		"tests": func(v *yaml.Node, p string) {
			if v.Kind != yaml.SequenceNode || len(v.Content) == 0 {
				d.errorf(v, p, "expected a list of tests, each with name, parent and steps")
				return
			}
			for i, item := range v.Content {
				f.Tests = append(f.Tests, d.test(item, fmt.Sprintf("%s[%d]", p, i)))
			}
		},
	}, map[string]string{
		"policy": "give the policy's file, relative to this one",
		"tests":  "give a list of tests, each with name, parent and steps",
	})
	names := map[string]bool{}
	for _, t := range f.Tests {
		if names[t.Name] {
			d.errorf(n, t.Path+".name", "%q names two tests: give each its own name", t.Name)
		}
		names[t.Name] = true
	}
}

func (d *decoder) test(n *yaml.Node, path string) *Test {
	t := &Test{Path: path, Line: n.Line}
	d.fields(n, path, map[string]func(*yaml.Node, string){
		"name": func(v *yaml.Node, p string) { t.Name = d.str(v, p) },
		"parent": func(v *yaml.Node, p string) {
			d.source(v, p, &t.Parent)
		},
		"related":  func(v *yaml.Node, p string) { t.Related = d.objects(v, p) },
		"observed": func(v *yaml.Node, p string) { t.Observed = d.objects(v, p) },
		"steps": func(v *yaml.Node, p string) {
			if v.Kind != yaml.SequenceNode || len(v.Content) == 0 {
				d.errorf(v, p, "expected a list of steps, each with what it expects (expect)")
				return
			}
			for i, item := range v.Content {
				t.Steps = append(t.Steps, d.step(item, fmt.Sprintf("%s[%d]", p, i), i))
			}
		},
	}, map[string]string{
		"name":   "give the test a name, unique in the file",
		"parent": "give the parent's file (relative to this one), or the object inline",
		"steps":  "give a list of steps, each with what it expects (expect)",
	})
	return t
}

func (d *decoder) step(n *yaml.Node, path string, i int) *Step {
	s := &Step{Name: fmt.Sprintf("step %d", i+1), Path: path, Line: n.Line, node: n}
	d.fields(n, path, map[string]func(*yaml.Node, string){
		"name":     func(v *yaml.Node, p string) { s.Name = d.str(v, p) },
		"parent":   func(v *yaml.Node, p string) { s.ParentPatch = d.object(v, p) },
		"related":  func(v *yaml.Node, p string) { s.Related = d.objects(v, p) },
		"observed": func(v *yaml.Node, p string) { s.Observed = d.objects(v, p) },
		"expect":   func(v *yaml.Node, p string) { s.Expect = d.expect(v, p) },
	}, nil)
	return s
}

func (d *decoder) expect(n *yaml.Node, path string) *Expect {
	e := &Expect{Match: MatchExact, Has: map[string]bool{}, Line: n.Line}
	d.fields(n, path, map[string]func(*yaml.Node, string){
		"match": func(v *yaml.Node, p string) {
			if e.Match = d.str(v, p); e.Match != MatchExact && e.Match != MatchSubset {
				d.errorf(v, p, "%q is no match mode: use exact (the default) or subset", e.Match)
			}
		},
		"children": func(v *yaml.Node, p string) {
			e.Has["children"] = true
			e.Children = []any{} // children: [] expects none; nil would read as null, which nothing gives
			if v.Kind != yaml.SequenceNode {
				d.errorf(v, p, "expected a list of objects (an empty list: no children)")
				return
			}
			for i, item := range v.Content {
				e.Children = append(e.Children, d.expectedChild(item, fmt.Sprintf("%s[%d]", p, i)))
			}
		},
		"status":  func(v *yaml.Node, p string) { e.Has["status"] = true; e.Status = d.object(v, p) },
		"changes": func(v *yaml.Node, p string) { e.Has["changes"] = true; e.Changes = d.strs(v, p) },
		"error":   func(v *yaml.Node, p string) { e.Has["error"] = true; e.Error = d.str(v, p) },
	}, nil)
	if len(e.Has) == 0 {
		d.errorf(n, path, "expects nothing: give children, status, changes or error (or run with --update to record what the step gives)")
	}
	return e
}

// expectedChild reads an expected child, named by metadata.name (a name or a glob) or by id, the
// policy's child id (authorsTerms).
func (d *decoder) expectedChild(n *yaml.Node, path string) map[string]any {
	m := d.object(n, path)
	if id, ok := m["id"]; ok {
		if s, _ := id.(string); s == "" {
			d.errorf(valueNode(n, "id"), path+".id", "expected the id of one of the policy's children (children[].id), a string")
		}
	}
	name, ok := nested(m, "metadata", "name").(string)
	if _, err := pathpkg.Match(name, ""); ok && err != nil {
		d.errorf(valueNode(valueNode(n, "metadata"), "name"), path+".metadata.name",
			"%q is no glob (%v): use * for any characters, ? for one, [a-z] for one of a range", name, err)
	}
	return m
}

// valueNode is the value of key in a mapping node, or the node itself when it has none, for an
// error's line.
func valueNode(n *yaml.Node, key string) *yaml.Node {
	for i := 0; n.Kind == yaml.MappingNode && i+1 < len(n.Content); i += 2 {
		if n.Content[i].Value == key {
			return n.Content[i+1]
		}
	}
	return n
}
