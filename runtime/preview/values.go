package preview

import (
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation/field"
)

// withValues shows, in each error of a value of the wrong type, the value the object holds where
// the API server's schema validator shows the name of its type (`Invalid value: "string": ...
// must be of type integer` of a field holding "two"): the author looks for the value.
func withValues(obj map[string]any, errs field.ErrorList) field.ErrorList {
	for _, e := range errs {
		if e.Type != field.ErrorTypeTypeInvalid {
			continue
		}
		if v, ok := valueAt(obj, e.Field); ok {
			e.BadValue = v // an object or a list is shown as JSON
		}
	}
	return errs
}

// valueAt returns the value at a field path as field.Path writes one: spec.items[0].name,
// metadata.labels[app.kubernetes.io/name].
func valueAt(obj map[string]any, path string) (any, bool) {
	var v any = obj
	for path != "" {
		var step string
		index := strings.HasPrefix(path, "[")
		if index {
			end := strings.Index(path, "]")
			if end < 0 {
				return nil, false
			}
			step, path = path[1:end], path[end+1:]
		} else {
			end := strings.IndexAny(path, ".[")
			if end < 0 {
				end = len(path)
			}
			step, path = path[:end], path[end:]
		}
		path = strings.TrimPrefix(path, ".")
		var ok bool
		if v, ok = stepInto(v, step, index); !ok {
			return nil, false
		}
	}
	return v, true
}

// stepInto returns a field of an object, or an item of a list ([i]) or a value of a map ([key]).
func stepInto(v any, step string, index bool) (any, bool) {
	switch x := v.(type) {
	case map[string]any:
		item, ok := x[step]
		return item, ok
	case []any:
		i, err := strconv.Atoi(step)
		if !index || err != nil || i < 0 || i >= len(x) {
			return nil, false
		}
		return x[i], true
	}
	return nil, false
}
