package policy

import (
	"fmt"
	"hash/fnv"
	"slices"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/validation/field"
	smdschema "sigs.k8s.io/structured-merge-diff/v6/schema"

	"metacel.dev/metacel/runtime/apivalidation"
	"metacel.dev/metacel/runtime/expr"
	"metacel.dev/metacel/runtime/fieldpath"
	"metacel.dev/metacel/runtime/kinds"
)

// apiValidation refuses at load a template of a built-in kind whose literal values the API
// server's validation of the kind refuses (runtime/apivalidation): a literal name too long, a
// label value with '@', port 80800, a six-field schedule, a literal selector that does not select
// the template's literal labels. Each error is reported at the line of the literal that causes it.
//
// Validation needs an object: the template's expressions are stood in for (probe), and an error
// is the template's only when nothing an expression gives could make it go away (templateError).
// What the expressions give is checked at render.
func (c *checker) apiValidation(tmpl map[string]any, path string, s *kinds.ObjectSchema) {
	obj := &unstructured.Unstructured{Object: tmpl}
	if !apivalidation.Knows(obj.GroupVersionKind()) {
		return
	}
	types, root := s.Types()
	p := &probe{types: types}
	content, _ := p.value(tmpl, root, "")
	probed := &unstructured.Unstructured{Object: content.(map[string]any)}
	if info, ok := templateKind(c.m, tmpl); ok && !info.Namespaced {
		probed.SetNamespace("") // placement says so, with metacel's fix
	}
	errs := apivalidation.Validate(probed)
	reported := map[string]bool{}
	var located []located
	for _, e := range errs {
		if p.renumbered(e.Field) || e.Type == field.ErrorTypeNotFound && p.lostVolumes() {
			continue // its items moved where expression items were left out, or it names a volume one of those gave
		}
		if l, ok := locate(tmpl, path, e); ok {
			located = append(located, l)
		}
	}
	for _, l := range located {
		if l.absent && sameValueElsewhere(l, located) {
			continue // a value defaulted from another (a Service's targetPort from its port)
		}
		msg := fmt.Sprintf("the API server would refuse this %s: %v", s.Kind, l.err)
		if fix := apivalidation.Fix(l.err); fix != "" {
			msg += " (fix: " + fix + ")"
		}
		if key := l.path + "\x00" + msg; !reported[key] {
			reported[key] = true
			c.errorf(l.path, "%s", msg)
		}
	}
}

// probe builds the object that stands for a template in validation: a string field's ${} each
// become a token (one per expression, so that two fields with one expression agree), any other
// field given by an expression is left out (its default stands in), and so is a list's item given
// by an expression; the items after it then move, and the errors inside that list are not the
// template's to locate (renumberedLists).
type probe struct {
	types *smdschema.Schema
	// renumberedLists are the paths (as field.Path spells them) of the lists that lost an item
	renumberedLists []string
}

// value returns what stands for v, a value of type tr at path, and whether the field keeps a
// value.
func (p *probe) value(v any, tr smdschema.TypeRef, path string) (any, bool) {
	atom, known := p.types.Resolve(tr)
	switch x := v.(type) {
	case map[string]any:
		if !known || atom.Map == nil {
			return x, true
		}
		out := make(map[string]any, len(x))
		for k, item := range x {
			ftr := atom.Map.ElementType
			if f, ok := atom.FindField(k); ok {
				ftr = f.Type
			}
			if val, keep := p.value(item, ftr, childPath(path, k)); keep {
				out[k] = val
			}
		}
		return out, true
	case []any:
		if !known || atom.List == nil {
			return x, true
		}
		out := make([]any, 0, len(x))
		for i, item := range x {
			val, keep := p.value(item, atom.List.ElementType, fmt.Sprintf("%s[%d]", path, i))
			if !keep {
				p.renumberedLists = append(p.renumberedLists, path)
				continue
			}
			out = append(out, val)
		}
		return out, true
	case string:
		return p.str(x, known && atom.Scalar != nil && *atom.Scalar == smdschema.String)
	}
	return v, true
}

// childPath is the path of field k of the value at path, as field.Path spells it.
func childPath(path, k string) string {
	if path == "" {
		return k
	}
	return path + "." + k
}

// lostVolumes reports whether a list of volumes (a pod's, a StatefulSet's claim templates) lost
// an item given by an expression: a mount may name it.
func (p *probe) lostVolumes() bool {
	return slices.ContainsFunc(p.renumberedLists, func(l string) bool {
		return strings.HasSuffix(l, "volumes") || strings.HasSuffix(l, "volumeClaimTemplates")
	})
}

// renumbered reports whether a path lies in a list that lost an item given by an expression.
func (p *probe) renumbered(path string) bool {
	for _, l := range p.renumberedLists {
		if path == l || strings.HasPrefix(path, l+"[") || strings.HasPrefix(path, l+".") {
			return true
		}
	}
	return false
}

// str stands in for a string: a token for each expression where the field takes a string, none
// elsewhere (a number, a quantity, an int-or-string given by an expression is left out).
func (p *probe) str(s string, takesString bool) (any, bool) {
	if !strings.Contains(s, "${") {
		return s, true
	}
	if !takesString {
		return nil, false
	}
	out, _, err := expr.Substitute(s, token)
	if err != nil {
		return nil, false
	}
	return out, true
}

// token stands for the value of one expression: a DNS label, which fits any name, label value or
// key an expression usually gives.
func token(src string) string {
	h := fnv.New32a()
	_, _ = h.Write([]byte(src))
	return fmt.Sprintf("x%07x", h.Sum32()&0xfffffff)
}

// located is a validation error that is the template's, at its place in the policy.
type located struct {
	err  *field.Error
	path string
	// absent: the error's field is not in the template (a default's, or a required field's), and
	// path is that of the closest field that is
	absent bool
}

// locate finds the template's literal that causes a validation error (templateError), at its path
// in the policy; ok is false when an expression may cause it.
func locate(tmpl map[string]any, path string, e *field.Error) (located, bool) {
	node, at, found := walkField(tmpl, path, e.Field)
	if !found {
		return located{err: e, path: at, absent: true}, literal(node) && dependsOnLiterals(tmpl, path, e)
	}
	if literal(node) {
		return located{err: e, path: at}, dependsOnLiterals(tmpl, path, e)
	}
	// a map with expressions among literals (labels): the literal key or value the error names
	if within, ok := findValue(node, at, e.BadValue); ok {
		return located{err: e, path: within}, dependsOnLiterals(tmpl, path, e)
	}
	return located{}, false
}

// sameValueElsewhere reports whether another located error names the same value as an absent
// one: a default copied from a field the template has (a Service's targetPort from its port)
// is reported there.
func sameValueElsewhere(l located, all []located) bool {
	for _, o := range all {
		if !o.absent && o.err.BadValue != nil && fmt.Sprint(o.err.BadValue) == fmt.Sprint(l.err.BadValue) {
			return true
		}
	}
	return false
}

// dependsOnLiterals reports whether the other fields an error compares its own with are
// literals too: a workload's selector for its template's labels, a pod's volumes for a mount;
// any other reference not found, the whole template.
func dependsOnLiterals(tmpl map[string]any, path string, e *field.Error) bool {
	switch {
	case strings.Contains(e.Detail, "`selector` does not match template `labels`"):
		owner := strings.TrimSuffix(e.Field, ".template.metadata.labels")
		node, _, _ := walkField(tmpl, path, owner+".selector")
		return literal(node)
	case e.Type == field.ErrorTypeNotFound && (strings.Contains(e.Field, ".volumeMounts[") || strings.Contains(e.Field, ".volumeDevices[")):
		node, _, _ := walkField(tmpl, path, podSpecOf(e.Field)+".volumes")
		return literal(node)
	case e.Type == field.ErrorTypeNotFound:
		return literal(tmpl)
	}
	return true
}

// podSpecOf returns the path of the pod spec that holds a container's field.
func podSpecOf(p string) string {
	for _, list := range []string{".containers[", ".initContainers[", ".ephemeralContainers["} {
		if i := strings.Index(p, list); i >= 0 {
			return p[:i]
		}
	}
	return p
}

// walkField follows a validation error's field path (spec.ports[0].port, metadata.labels[a/b])
// through the template: the node it names and its path in the policy, or, when the template does
// not have it, the closest node it has and that node's path.
func walkField(tmpl map[string]any, path, fieldPath string) (node any, at string, found bool) {
	node, at = any(tmpl), path
	for _, step := range fieldSteps(fieldPath) {
		switch n := node.(type) {
		case map[string]any:
			next, ok := n[step]
			if !ok {
				return node, at, false
			}
			node, at = next, fieldpath.Field(at, step)
		case []any:
			i, err := strconv.Atoi(step)
			if err != nil || i < 0 || i >= len(n) {
				return node, at, false
			}
			node, at = n[i], fieldpath.Index(at, i)
		default:
			return node, at, false
		}
	}
	return node, at, true
}

// fieldSteps splits a field.Path's string into its field names, indexes and keys.
func fieldSteps(p string) []string {
	var steps []string
	for p != "" {
		switch p[0] {
		case '.':
			p = p[1:]
		case '[':
			end := strings.IndexByte(p, ']')
			if end < 0 {
				return append(steps, p[1:])
			}
			steps = append(steps, p[1:end])
			p = p[end+1:]
		default:
			end := strings.IndexAny(p, ".[")
			if end < 0 {
				end = len(p)
			}
			steps = append(steps, p[:end])
			p = p[end:]
		}
	}
	return steps
}

// literal reports whether a template value holds no expression.
func literal(v any) bool {
	switch x := v.(type) {
	case map[string]any:
		for _, item := range x {
			if !literal(item) {
				return false
			}
		}
	case []any:
		return !slices.ContainsFunc(x, func(item any) bool { return !literal(item) })
	case string:
		return !strings.Contains(x, "${")
	}
	return true
}

// findValue finds, in a map or list with expressions in it, the literal key or value an error
// names (a label value among labels), in key order; its path.
func findValue(node any, at string, bad any) (string, bool) {
	want, scalar := scalarText(bad)
	if !scalar {
		return "", false
	}
	switch n := node.(type) {
	case map[string]any:
		for _, k := range sortedKeys(n) {
			if k == want {
				return fieldpath.Field(at, k), true
			}
			if got, ok := scalarText(n[k]); ok && got == want && literal(n[k]) {
				return fieldpath.Field(at, k), true
			}
		}
	case []any:
		for i, item := range n {
			if got, ok := scalarText(item); ok && got == want && literal(item) {
				return fieldpath.Index(at, i), true
			}
		}
	}
	return "", false
}

// scalarText returns a string's or a number's text.
func scalarText(v any) (string, bool) {
	switch x := v.(type) {
	case string:
		return x, true
	case int, int32, int64, float64:
		return fmt.Sprint(x), true
	}
	return "", false
}
