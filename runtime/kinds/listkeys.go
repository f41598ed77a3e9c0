package kinds

import (
	"slices"

	smdschema "sigs.k8s.io/structured-merge-diff/v6/schema"
)

// ListKeyFields returns the paths of the key fields of each keyed list (a map list: containers by
// name, ports by port and protocol) that obj, an object of the schema's kind or a template of one,
// writes into: the field names from the object's root, lists' items taking no step of their own
// (spec.ports.protocol). Whoever matches the items of such a list by key (the no-op check) reads
// every key of every item, those obj leaves to their default included.
func (s *ObjectSchema) ListKeyFields(obj map[string]any) [][]string {
	var out [][]string
	s.listKeyFields(obj, s.parser.TypeRef, nil, &out)
	return out
}

func (s *ObjectSchema) listKeyFields(v any, tr smdschema.TypeRef, path []string, out *[][]string) {
	atom, ok := s.parser.Schema.Resolve(tr)
	if !ok {
		return
	}
	switch x := v.(type) {
	case map[string]any:
		m := atom.Map
		if m == nil {
			return
		}
		for k, fv := range x {
			ft := m.ElementType
			if f, ok := m.FindField(k); ok {
				ft = f.Type
			}
			if ft != (smdschema.TypeRef{}) {
				s.listKeyFields(fv, ft, append(slices.Clip(path), k), out)
			}
		}
	case []any:
		l := atom.List
		if l == nil {
			return
		}
		if l.ElementRelationship == smdschema.Associative {
			for _, key := range l.Keys {
				*out = append(*out, append(slices.Clip(path), key))
			}
		}
		for _, item := range x {
			s.listKeyFields(item, l.ElementType, path, out)
		}
	}
}
