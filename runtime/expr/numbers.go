package expr

import (
	"maps"
	"slices"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
)

// Numbers are where an object's schema declares number fields (type: number). JSON decodes a
// whole number there (2, 2.0, or a default of 1) as an int, which CEL, typing the field double
// from the schema, cannot use as one (no such overload: string(int), int * double); the API
// server's CEL converts by the schema (UnstructuredToVal), and AsDoubles does so for the values
// metacel binds. A nil *Numbers converts nothing: a schema without number fields, or none known.
type Numbers struct {
	number bool
	fields map[string]*Numbers
	// items are a list's items, values a map's values (additionalProperties)
	items, values *Numbers
}

// NumbersOf returns where s declares number fields; nil when it declares none.
func NumbersOf(s *apiextensionsv1.JSONSchemaProps) *Numbers {
	if s == nil {
		return nil
	}
	n := &Numbers{number: s.Type == "number"}
	for name, p := range s.Properties {
		if sub := NumbersOf(&p); sub != nil {
			if n.fields == nil {
				n.fields = map[string]*Numbers{}
			}
			n.fields[name] = sub
		}
	}
	if s.Items != nil {
		n.items = NumbersOf(s.Items.Schema)
	}
	if s.AdditionalProperties != nil {
		n.values = NumbersOf(s.AdditionalProperties.Schema)
	}
	if !n.number && n.fields == nil && n.items == nil && n.values == nil {
		return nil
	}
	return n
}

// AsDoubles returns obj with the whole numbers of its number fields as float64. obj is never
// modified (it may be an informer's): the maps and lists on the way to a number converted are
// copied, the rest shared.
func (n *Numbers) AsDoubles(obj map[string]any) map[string]any {
	if out, changed := n.convert(obj); changed {
		return out.(map[string]any)
	}
	return obj
}

// convert returns v converted, and whether anything in it was.
func (n *Numbers) convert(v any) (any, bool) {
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
		for k, e := range x {
			sub, ok := n.fields[k]
			if !ok {
				sub = n.values
			}
			if converted, changed := sub.convert(e); changed {
				if out == nil {
					out = maps.Clone(x)
				}
				out[k] = converted
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
