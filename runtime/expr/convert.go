package expr

import (
	"encoding/base64"
	"errors"
	"fmt"
	"time"

	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/common/types/ref"
	"github.com/google/cel-go/common/types/traits"
)

// errAbsent marks an optional value that has none: the field it would fill is left out.
var errAbsent = errors.New("absent")

// toNative converts a CEL value into fresh JSON-like Go values (map[string]any, []any, string,
// int64, float64, bool, nil) that share nothing with the inputs of the evaluation, so the result
// may be changed freely without touching an informer's cache. An optional without a value
// converts to nil.
func toNative(v ref.Val) (any, error) {
	out, err := celToNative(v)
	if errors.Is(err, errAbsent) {
		return nil, nil
	}
	return out, err
}

func celToNative(v ref.Val) (any, error) {
	switch x := v.(type) {
	case types.String:
		return string(x), nil
	case types.Int:
		return int64(x), nil
	case types.Uint:
		if uint64(x) > 1<<63-1 {
			return nil, fmt.Errorf("unsigned integer %d does not fit a JSON integer", uint64(x))
		}
		return int64(x), nil
	case types.Double:
		return float64(x), nil
	case types.Bool:
		return bool(x), nil
	case types.Null:
		return nil, nil
	case types.Bytes:
		return base64.StdEncoding.EncodeToString(x), nil // as JSON encodes bytes
	case types.Timestamp:
		return x.Time.UTC().Format(time.RFC3339Nano), nil
	case types.Duration:
		return x.String(), nil
	case *types.Err:
		return nil, x
	case *types.Unknown:
		return nil, fmt.Errorf("unknown value")
	case *types.Optional:
		if !x.HasValue() {
			return nil, errAbsent
		}
		return celToNative(x.GetValue())
	case traits.Mapper:
		return mapToNative(x)
	case traits.Lister:
		return listToNative(x)
	}
	if s, ok := v.Value().(fmt.Stringer); ok { // quantity, URL, IP, CIDR, semver
		return s.String(), nil
	}
	return nil, fmt.Errorf("cannot convert a CEL %s to JSON", v.Type().TypeName())
}

func mapToNative(m traits.Mapper) (map[string]any, error) {
	out := make(map[string]any, int(m.Size().(types.Int)))
	for it := m.Iterator(); it.HasNext() == types.True; {
		k := it.Next()
		key, ok := k.(types.String)
		if !ok {
			return nil, fmt.Errorf("map keys must be strings, got %s %v", k.Type().TypeName(), k.Value())
		}
		val, err := celToNative(m.Get(k))
		if errors.Is(err, errAbsent) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %w", key, err)
		}
		out[string(key)] = val
	}
	return out, nil
}

func listToNative(l traits.Lister) ([]any, error) {
	n := int(l.Size().(types.Int))
	out := make([]any, 0, n)
	for i := range n {
		val, err := celToNative(l.Get(types.Int(i)))
		if errors.Is(err, errAbsent) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("[%d]: %w", i, err)
		}
		out = append(out, val)
	}
	return out, nil
}
