package expr

import (
	"slices"
	"strings"

	"github.com/google/cel-go/cel"
	"github.com/google/cel-go/common/ast"
	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/common/types/ref"
	"github.com/google/cel-go/common/types/traits"
	"github.com/google/cel-go/interpreter"
)

// CEL leaves the order a map is iterated in unspecified, and cel-go's is Go's: random. A
// comprehension over a map (`parent.spec.env.map(k, {'name': k, 'value': parent.spec.env[k]})`,
// `transformList`, `filter`) would then give its list in another order at each evaluation, so a
// child built from it would differ at every render and be written at every sync (recreated, with
// updateStrategy Recreate). Every program iterates a map by its keys in order instead: strings
// lexically, numbers by value (keys of several types by type, then value).

// sortedMapRanges is a cel-go decorator that makes the maps the comprehensions of ast iterate over
// iterate in key order: it wraps the step that evaluates each comprehension's range.
func sortedMapRanges(a *cel.Ast) cel.ProgramOption {
	ranges := map[int64]bool{}
	ast.PostOrderVisit(a.NativeRep().Expr(), ast.NewExprVisitor(func(e ast.Expr) {
		if e.Kind() == ast.ComprehensionKind {
			ranges[e.AsComprehension().IterRange().ID()] = true
		}
	}))
	return cel.CustomDecorator(func(i interpreter.Interpretable) (interpreter.Interpretable, error) {
		if !ranges[i.ID()] {
			return i, nil
		}
		return sortedRange{i}, nil
	})
}

// sortedRange evaluates a comprehension's range; a map it gives iterates in key order.
type sortedRange struct {
	interpreter.Interpretable
}

// Eval implements interpreter.Interpretable.
func (r sortedRange) Eval(a interpreter.Activation) ref.Val {
	v := r.Interpretable.Eval(a)
	if m, ok := v.(traits.Mapper); ok {
		return sortedMap{m}
	}
	return v
}

// sortedMap is a map that iterates its keys in order.
type sortedMap struct {
	traits.Mapper
}

// Iterator implements traits.Iterable: the keys, sorted.
func (m sortedMap) Iterator() traits.Iterator {
	var keys []ref.Val
	for it := m.Mapper.Iterator(); it.HasNext() == types.True; {
		keys = append(keys, it.Next())
	}
	slices.SortFunc(keys, compareKeys)
	return types.NewRefValList(types.DefaultTypeAdapter, keys).Iterator()
}

// compareKeys orders map keys: by type, then by value.
func compareKeys(a, b ref.Val) int {
	if c := strings.Compare(a.Type().TypeName(), b.Type().TypeName()); c != 0 {
		return c
	}
	if cmp, ok := a.(traits.Comparer); ok {
		if r, ok := cmp.Compare(b).(types.Int); ok {
			return int(r)
		}
	}
	return 0
}
