package expr

import (
	"maps"
	"slices"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiservercel "k8s.io/apiserver/pkg/cel"
)

// Shape is what an object's schema changes in how CEL reads the object, where plain JSON gives
// CEL something else than the schema types (the API server's CEL reads objects through the
// schema, UnstructuredToVal; metacel binds plain maps, AsCEL fills the difference):
//   - a number field (type: number) holding a whole number, which JSON decodes as an int: CEL,
//     typing the field double, cannot use an int as one (string(int), int * double);
//   - a field whose name is no CEL identifier (a-b, a.b, a__b), declared, as Kubernetes' CEL
//     library declares it, under its escaped name (a__dash__b): the expression selects that
//     name, which the plain map did not hold (a keyword, namespace, is found unescaped).
//
// A nil *Shape changes nothing: a schema with neither, or none known.
type Shape struct {
	number bool
	fields map[string]*Shape
	// escaped are the escaped names of the fields that have one, by name
	escaped map[string]string
	// items are a list's items, values a map's values (additionalProperties)
	items, values *Shape
}

// ShapeOf returns what s changes in how CEL reads its objects; nil when nothing.
func ShapeOf(s *apiextensionsv1.JSONSchemaProps) *Shape {
	if s == nil {
		return nil
	}
	n := &Shape{number: s.Type == "number"}
	for name, p := range s.Properties {
		if sub := ShapeOf(&p); sub != nil {
			if n.fields == nil {
				n.fields = map[string]*Shape{}
			}
			n.fields[name] = sub
		}
		if escaped, ok := apiservercel.Escape(name); ok && escaped != name {
			if _, keyword := keywordField(name); !keyword {
				if n.escaped == nil {
					n.escaped = map[string]string{}
				}
				n.escaped[name] = escaped
			}
		}
	}
	if s.Items != nil {
		n.items = ShapeOf(s.Items.Schema)
	}
	if s.AdditionalProperties != nil {
		n.values = ShapeOf(s.AdditionalProperties.Schema)
	}
	if !n.number && n.fields == nil && n.escaped == nil && n.items == nil && n.values == nil {
		return nil
	}
	return n
}

// AsCEL returns obj as CEL reads it: the whole numbers of its number fields as float64, and each
// field whose name is no CEL identifier under its escaped name too. obj is never modified (it
// may be an informer's): the maps and lists on the way to a change are copied, the rest shared.
func (n *Shape) AsCEL(obj map[string]any) map[string]any {
	if out, changed := n.convert(obj); changed {
		return out.(map[string]any)
	}
	return obj
}

// convert returns v as CEL reads it, and whether anything in it changed.
func (n *Shape) convert(v any) (any, bool) {
	if n == nil {
		return v, false
	}
	switch x := v.(type) {
	case int64:
		if n.number {
			return float64(x), true
		}
	case map[string]any:
		var out map[string]any
		set := func(k string, e any) {
			if out == nil {
				out = maps.Clone(x)
			}
			out[k] = e
		}
		for k, e := range x {
			sub, ok := n.fields[k]
			if !ok {
				sub = n.values
			}
			converted, changed := sub.convert(e)
			if changed {
				set(k, converted)
			}
			if escaped, ok := n.escaped[k]; ok {
				set(escaped, converted)
			}
		}
		if out != nil {
			return out, true
		}
	case []any:
		var out []any
		for i, e := range x {
			if converted, changed := n.items.convert(e); changed {
				if out == nil {
					out = slices.Clone(x)
				}
				out[i] = converted
			}
		}
		if out != nil {
			return out, true
		}
	}
	return v, false
}
