package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"metacel.dev/metacel/runtime/conversion"
	"metacel.dev/metacel/runtime/kinds"
	"metacel.dev/metacel/runtime/manifest"
	"metacel.dev/metacel/runtime/policy"
	"metacel.dev/metacel/runtime/preview"
)

// samples checks the sample parents among files, those that are no policy: each object of a
// valid policy's parent resource is admitted as the API server would admit its create, against
// the parent's schema (its CRD, or the policy's parentSchema; preview.AdmitParent). A valid sample
// is a line on out; each field refused is an error on errOut at its file:line; a sample whose
// schema is unknown is a note. It returns the files that hold no sample, and whether every sample
// passed.
func (v validation) samples(ctx context.Context, out, errOut io.Writer, files []string, policies []*policy.Compiled) (rest []string, ok bool) {
	ok = true
	for _, f := range files {
		found, err := v.samplesOf(f, policies)
		if err != nil {
			fmt.Fprintln(errOut, err)
			ok = false
			continue
		}
		if len(found) == 0 {
			rest = append(rest, f)
			continue
		}
		for _, s := range found {
			ok = v.checkSample(ctx, out, errOut, f, s) && ok
		}
	}
	return rest, ok
}

// sample is an object of a file that is a policy's parent, with the YAML node it was read from.
type sample struct {
	obj    *unstructured.Unstructured
	node   *yaml.Node // nil when not found: its errors are then at the file's first line
	policy *policy.Compiled
}

// samplesOf returns the objects of a file that are parents of one of policies. A file that holds
// no object of a parent resource is not read further: a test file, or YAML that is no object,
// holds no sample.
func (v validation) samplesOf(file string, policies []*policy.Compiled) ([]sample, error) {
	heads, _ := manifest.ReadHeads(file) // a file that is not YAML is a policy file: never here
	if !v.holdsParent(heads, policies) {
		return nil, nil
	}
	objs, err := manifest.ReadFile(file)
	if err != nil {
		return nil, err
	}
	nodes, err := documentNodes(file)
	if err != nil {
		return nil, err
	}
	var out []sample
	for _, obj := range objs {
		for _, c := range policies {
			if v.isParent(obj.GroupVersionKind(), c) {
				out = append(out, sample{obj: obj, node: nodeOf(nodes, obj), policy: c})
			}
		}
	}
	return out, nil
}

// holdsParent reports whether a document of the file is an object of a policy's parent resource.
func (v validation) holdsParent(heads []manifest.Head, policies []*policy.Compiled) bool {
	for _, h := range heads {
		if !h.IsObject() {
			continue
		}
		gvk := schema.FromAPIVersionAndKind(h.APIVersion, h.Kind)
		for _, c := range policies {
			if v.isParent(gvk, c) {
				return true
			}
		}
	}
	return false
}

// isParent reports whether an object of that kind is a parent of c: of its parent resource, at
// the policy's version or another its parentSchema declares (and converts); one at another
// version is not the policy's to check.
func (v validation) isParent(gvk schema.GroupVersionKind, c *policy.Compiled) bool {
	if kinds.LookupKind(v.mapper, gvk).GVR == c.Parent.GVR {
		return true
	}
	cv := c.Conversion
	return cv != nil && gvk.Group == cv.Group && gvk.Kind == cv.Kind && cv.Versions[gvk.Version] != nil
}

// checkSample admits one sample and reports it; it reports whether it passed.
func (v validation) checkSample(ctx context.Context, out, errOut io.Writer, file string, s sample) bool {
	what := fmt.Sprintf("%s %s", s.obj.GetKind(), namespacedName(s.obj))
	against := v.sampleSchema(s.policy)
	if against == "" {
		fmt.Fprintf(errOut, "note: %s: %s, a parent of policy %q, is unchecked: its schema is unknown (give its CRD with --crd, or declare spec.parentSchema)\n",
			file, what, s.policy.Name())
		return true
	}
	if why := kinds.WrongKind(s.policy.Parent, s.obj.GetKind()); why != "" {
		fmt.Fprintf(errOut, "%s:%d: kind: %s\n", file, lineOf(s.node, "kind"), why)
		return false
	}
	// at another version: admitted at it and converted, as the API server takes a create at it
	parent, err := preview.ParentOf(ctx, []*unstructured.Unstructured{s.obj}, s.policy, v.mapper, file)
	if err == nil {
		parent, err = preview.AdmitParent(ctx, s.policy, parent)
	}
	var invalid *preview.InvalidError
	switch {
	case errors.As(err, &invalid):
		problems := invalid.Problems()                                        // a new slice
		slices.SortStableFunc(problems, func(a, b preview.FieldProblem) int { // in the file's order
			return cmp.Compare(lineOf(s.node, a.Path), lineOf(s.node, b.Path))
		})
		for _, p := range problems {
			fmt.Fprintf(errOut, "%s:%d: %s: %s (the API server would refuse %s, a parent of policy %q, %s)\n",
				file, lineOf(s.node, p.Path), p.Path, p.Msg, what, s.policy.Name(), against)
		}
		return false
	case err != nil:
		fmt.Fprintf(errOut, "%s:%d: %s: %v\n", file, lineOf(s.node, ""), what, err)
		return false
	}
	if err := roundTrip(ctx, s.policy, parent); err != nil { // as stored: its defaults given
		fmt.Fprintf(errOut, "%s:%d: %v (the API server would lose it the first time it stores the parent at another version of policy %q's parentSchema: "+
			"carry every field in toHub and fromHub, or list it in keep)\n", file, lineOf(s.node, ""), err, s.policy.Name())
		return false
	}
	fmt.Fprintf(out, "%s: %s is a valid parent of policy %q (%s)\n", file, what, s.policy.Name(), against)
	return true
}

// roundTrip converts a sample parent to each other version its policy declares and back, and
// says what changed (conversion.Converter.RoundTrip); nil for a policy of one version.
func roundTrip(ctx context.Context, c *policy.Compiled, obj *unstructured.Unstructured) error {
	if c.Conversion == nil {
		return nil
	}
	cv, err := conversion.New(c.Conversion)
	if err != nil {
		return err
	}
	return cv.RoundTrip(ctx, obj)
}

// sampleSchema says what a policy's samples are checked against; "" when its parent's schema is
// unknown.
func (v validation) sampleSchema(c *policy.Compiled) string {
	gr := c.Parent.GVR.GroupResource()
	switch {
	case c.Parent.Schema == nil:
		return ""
	case v.cat.DefinedByCRD(gr):
		return "checked against CRD " + gr.String()
	case !c.Parent.Guessed && v.clusterDefines(c.Parent.GVR):
		return "checked against the cluster's CRD " + gr.String()
	}
	return "checked against the schema the policy declares"
}

func namespacedName(obj *unstructured.Unstructured) string {
	if obj.GetNamespace() == "" {
		return obj.GetName()
	}
	return obj.GetNamespace() + "/" + obj.GetName()
}

// documentNodes returns the mapping node of each YAML document of a file that is one.
func documentNodes(file string) ([]*yaml.Node, error) {
	data, err := manifest.ReadInput(file)
	if err != nil {
		return nil, err
	}
	docs, err := manifest.Documents(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", file, err)
	}
	return slices.DeleteFunc(docs, func(n *yaml.Node) bool { return n.Kind != yaml.MappingNode }), nil
}

// nodeOf finds the node obj was read from: a document, or an item of a List document, with its
// apiVersion, kind, name and namespace (as written); nil when none has them.
func nodeOf(nodes []*yaml.Node, obj *unstructured.Unstructured) *yaml.Node {
	for _, n := range nodes {
		if strings.HasSuffix(scalar(n, "kind"), "List") {
			if items := child(n, "items"); items != nil {
				if found := nodeOf(items.Content, obj); found != nil {
					return found
				}
			}
			continue
		}
		meta := child(n, "metadata")
		if scalar(n, "apiVersion") == obj.GetAPIVersion() && scalar(n, "kind") == obj.GetKind() &&
			scalar(meta, "name") == obj.GetName() && scalar(meta, "namespace") == obj.GetNamespace() {
			return n
		}
	}
	return nil
}

// child returns the value of key in a mapping node; nil when n is none or has no key.
func child(n *yaml.Node, key string) *yaml.Node {
	if n == nil || n.Kind != yaml.MappingNode {
		return nil
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		if n.Content[i].Value == key {
			return n.Content[i+1]
		}
	}
	return nil
}

func scalar(n *yaml.Node, key string) string {
	if v := child(n, key); v != nil && v.Kind == yaml.ScalarNode {
		return v.Value
	}
	return ""
}

// lineOf returns the line of a field path (spec.items[0].name, metadata.labels[a.b/c], as the
// API server names fields) in an object's node: the line of its key, or of the deepest field of
// the path that is there (a field the object lacks is at its parent); 1 without a node.
func lineOf(n *yaml.Node, path string) int {
	if n == nil {
		return 1
	}
	line := n.Line
	for _, seg := range pathSegments(path) {
		switch n.Kind {
		case yaml.MappingNode:
			key := keyNode(n, seg)
			if key == nil {
				return line
			}
			line, n = key.Line, child(n, seg)
		case yaml.SequenceNode:
			i, err := strconv.Atoi(seg)
			if err != nil || i < 0 || i >= len(n.Content) {
				return line
			}
			n = n.Content[i]
			line = n.Line
		default:
			return line
		}
	}
	return line
}

// keyNode returns the key node of key in a mapping node, or nil.
func keyNode(n *yaml.Node, key string) *yaml.Node {
	for i := 0; i+1 < len(n.Content); i += 2 {
		if n.Content[i].Value == key {
			return n.Content[i]
		}
	}
	return nil
}

// pathSegments splits a field path into its names and bracketed keys or indexes:
// spec.items[0].name is spec, items, 0, name.
func pathSegments(path string) []string {
	var out []string
	for path != "" {
		switch path[0] {
		case '.':
			path = path[1:]
		case '[':
			end := strings.IndexByte(path, ']')
			if end < 0 {
				return append(out, path[1:])
			}
			out = append(out, path[1:end])
			path = path[end+1:]
		default:
			end := strings.IndexAny(path, ".[")
			if end < 0 {
				end = len(path)
			}
			out = append(out, path[:end])
			path = path[end:]
		}
	}
	return out
}
