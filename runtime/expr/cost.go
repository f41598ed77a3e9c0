package expr

import (
	"fmt"
	"maps"
	"math"
	"slices"

	"github.com/google/cel-go/cel"
	"github.com/google/cel-go/checker"
	"github.com/google/cel-go/common"
	celast "github.com/google/cel-go/common/ast"
	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/common/types/ref"
	"github.com/google/cel-go/common/types/traits"
	apiservercel "k8s.io/apiserver/pkg/cel"
	"k8s.io/apiserver/pkg/cel/library"
)

// Sizes assumed by the cost estimate where no schema bounds a value. An object in Kubernetes is at
// most about 1.5 MiB, but bounding every unknown list by that would reject any expression that
// walks one; these figures keep linear expressions well inside perExpressionCostLimit and reject
// nested walks, and the run-time Budget still stops whatever the estimate let through.
const (
	assumedMaxElements     = 1_000
	assumedMaxStringLength = 4_096
)

// sizes estimates the size of values: from the parent's schema where it bounds them (maxItems,
// maxLength, maxProperties), else the assumed maxima.
type sizes struct {
	roots map[string]*apiservercel.DeclType
	// elements and chars are the assumed sizes of a list or map and of a string no schema bounds:
	// assumedMaxElements and assumedMaxStringLength, or more (scaled) to find out whether an
	// expression's cost depends on them
	elements, chars uint64
	// paths are the schema paths of the expression's nodes that cel-go's estimator does not
	// follow (forAST)
	paths map[int64][]string
}

func newSizes(roots map[string]*apiservercel.DeclType) *sizes {
	return &sizes{roots: roots, elements: assumedMaxElements, chars: assumedMaxStringLength}
}

// scaled returns the same estimator with the assumed sizes k times larger; the sizes a schema
// bounds, which the API server enforces, stay.
func (s *sizes) scaled(k uint64) *sizes {
	return &sizes{roots: s.roots, elements: s.elements * k, chars: s.chars * k, paths: s.paths}
}

func (s *sizes) EstimateSize(n checker.AstNode) *checker.SizeEstimate {
	if est := s.fromSchema(n.Path()); est != nil {
		return est
	}
	if e := n.Expr(); e != nil && s.paths != nil {
		if est := s.fromSchema(s.paths[e.ID()]); est != nil {
			return est
		}
	}
	switch n.Type().Kind() {
	case types.StringKind, types.BytesKind:
		return &checker.SizeEstimate{Min: 0, Max: s.chars}
	case types.ListKind, types.MapKind, types.DynKind, types.StructKind:
		return &checker.SizeEstimate{Min: 0, Max: s.elements}
	}
	return nil
}

// forAST returns the same estimator, knowing the schema paths of an expression's nodes where
// cel-go's estimator loses them: through an optional field (parent.spec.?names), its orValue or
// value (parent.spec.?names.orValue([]), the idiom to read a field that may be absent), and the
// variables of a comprehension over such a value. Without them, the bounds of the schema
// (maxItems, maxProperties, maxLength) are lost, and the estimate assumes the largest sizes.
func (s *sizes) forAST(a *cel.Ast) *sizes {
	out := *s
	out.paths = map[int64][]string{}
	w := &pathWalk{roots: s.roots, paths: out.paths, types: a.NativeRep().TypeMap(), locals: map[string][]string{}}
	w.walk(a.NativeRep().Expr())
	return &out
}

// pathWalk finds the schema path of every node of an expression that has one.
type pathWalk struct {
	roots  map[string]*apiservercel.DeclType
	paths  map[int64][]string
	types  map[int64]*types.Type
	locals map[string][]string // comprehension variables in scope, with their paths (nil: none)
}

func (w *pathWalk) set(e celast.Expr, p []string) []string {
	if len(p) > 0 {
		w.paths[e.ID()] = p
	}
	return p
}

// walk records the path of e and of the nodes under it, and returns e's.
func (w *pathWalk) walk(e celast.Expr) []string {
	switch e.Kind() {
	case celast.IdentKind:
		name := e.AsIdent()
		if p, local := w.locals[name]; local {
			return w.set(e, p)
		}
		if _, ok := w.roots[name]; ok {
			return w.set(e, []string{name})
		}
	case celast.SelectKind:
		sel := e.AsSelect()
		p := w.walk(sel.Operand())
		if sel.IsTestOnly() || p == nil {
			return nil
		}
		return w.set(e, appendPath(p, sel.FieldName()))
	case celast.CallKind:
		return w.call(e)
	case celast.ListKind:
		for _, el := range e.AsList().Elements() {
			w.walk(el)
		}
	case celast.MapKind:
		for _, en := range e.AsMap().Entries() {
			if me, ok := en.AsMapEntry(), en.Kind() == celast.MapEntryKind; ok {
				w.walk(me.Key())
				w.walk(me.Value())
			}
		}
	case celast.StructKind:
		for _, f := range e.AsStruct().Fields() {
			w.walk(f.AsStructField().Value())
		}
	case celast.ComprehensionKind:
		w.comprehension(e)
	}
	return nil
}

func (w *pathWalk) call(e celast.Expr) []string {
	c := e.AsCall()
	var target []string
	if c.IsMemberFunction() {
		target = w.walk(c.Target())
	}
	args := make([][]string, len(c.Args()))
	for i, a := range c.Args() {
		args[i] = w.walk(a)
	}
	switch c.FunctionName() {
	case "_?._":
		if len(args) == 2 && args[0] != nil {
			if f, ok := constString(c.Args()[1]); ok {
				return w.set(e, appendPath(args[0], f))
			}
		}
	case "_[_]", "_[?_]":
		if len(args) == 2 && args[0] != nil {
			switch t := w.types[c.Args()[0].ID()]; {
			case t != nil && t.Kind() == types.ListKind:
				return w.set(e, appendPath(args[0], "@items"))
			case t != nil && t.Kind() == types.MapKind:
				return w.set(e, appendPath(args[0], "@values"))
			}
			if f, ok := constString(c.Args()[1]); ok {
				return w.set(e, appendPath(args[0], f))
			}
		}
	case "value":
		if c.IsMemberFunction() {
			return w.set(e, target)
		}
	case "orValue":
		// the schema's bound holds when the default is no larger than any value: empty, or a
		// number or bool
		if c.IsMemberFunction() && len(c.Args()) == 1 && emptyOrScalar(c.Args()[0]) {
			return w.set(e, target)
		}
	case "optional.of", "optional.ofNonZeroValue":
		if len(args) == 1 {
			return w.set(e, args[0])
		}
	}
	return nil
}

// comprehension gives the variables of a comprehension the paths of its range's items (a list's
// @items, a map's @keys; the second variable of a two-variable one, @items or @values) and a
// bound variable (cel.bind) the path of its value.
func (w *pathWalk) comprehension(e celast.Expr) {
	comp := e.AsComprehension()
	rng := w.walk(comp.IterRange())
	init := w.walk(comp.AccuInit())
	saved := maps.Clone(w.locals)
	defer func() { w.locals = saved }()
	var first, second []string
	if rng != nil {
		if t := w.types[comp.IterRange().ID()]; t != nil && t.Kind() == types.MapKind {
			first, second = appendPath(rng, "@keys"), appendPath(rng, "@values")
		} else if comp.HasIterVar2() {
			second = appendPath(rng, "@items")
		} else {
			first = appendPath(rng, "@items")
		}
	}
	w.locals[comp.IterVar()] = first
	if comp.HasIterVar2() {
		w.locals[comp.IterVar2()] = second
	}
	w.locals[comp.AccuVar()] = init
	w.walk(comp.LoopCondition())
	w.walk(comp.LoopStep())
	w.walk(comp.Result())
}

// emptyOrScalar reports whether e is an empty list, map or string literal, or a literal of
// another type.
func emptyOrScalar(e celast.Expr) bool {
	switch e.Kind() {
	case celast.ListKind:
		return len(e.AsList().Elements()) == 0
	case celast.MapKind:
		return len(e.AsMap().Entries()) == 0
	case celast.LiteralKind:
		switch v := e.AsLiteral().(type) {
		case types.String:
			return v == ""
		case types.Bytes:
			return len(v) == 0
		}
		return true
	}
	return false
}

func appendPath(p []string, elem string) []string {
	return append(slices.Clip(p), elem)
}

func constString(e celast.Expr) (string, bool) {
	if e.Kind() != celast.LiteralKind {
		return "", false
	}
	s, ok := e.AsLiteral().(types.String)
	return string(s), ok
}

// fromSchema walks a path such as [parent spec items @items name] through the declared types.
func (s *sizes) fromSchema(path []string) *checker.SizeEstimate {
	if len(path) == 0 {
		return nil
	}
	t, ok := s.roots[path[0]]
	for _, name := range path[1:] {
		if !ok || t == nil {
			return nil
		}
		switch name {
		case "@items", "@values":
			t = t.ElemType
		case "@keys":
			t = t.KeyType
		default:
			var f *apiservercel.DeclField
			f, ok = t.Fields[name]
			if !ok { // a keyword field is declared escaped
				f, ok = t.Fields["__"+name+"__"]
			}
			if ok {
				t = f.Type
			}
		}
	}
	if !ok || t == nil || t.MaxElements <= 0 {
		return nil
	}
	return &checker.SizeEstimate{Min: 0, Max: uint64(t.MaxElements)}
}

// estimator is the compile-time cost model: Kubernetes' for its libraries, metacel's for its own
// functions, and sizes for values.
type estimator struct {
	k8s   *library.CostEstimator
	sizes *sizes
}

func newEstimator(s *sizes) *estimator {
	return &estimator{k8s: &library.CostEstimator{SizeEstimator: s}, sizes: s}
}

func (e *estimator) EstimateSize(n checker.AstNode) *checker.SizeEstimate {
	return e.sizes.EstimateSize(n)
}

func (e *estimator) EstimateCallCost(function, overloadID string, target *checker.AstNode, args []checker.AstNode) *checker.CallEstimate {
	if est := estimateOwnCall(function, e.argSizes(target, args)); est != nil {
		return est
	}
	return e.k8s.EstimateCallCost(function, overloadID, target, args)
}

func (e *estimator) argSizes(target *checker.AstNode, args []checker.AstNode) []checker.SizeEstimate {
	nodes := args
	if target != nil {
		nodes = append([]checker.AstNode{*target}, args...)
	}
	out := make([]checker.SizeEstimate, len(nodes))
	for i, n := range nodes {
		if s := n.ComputedSize(); s != nil {
			out[i] = *s
		} else if s := e.sizes.EstimateSize(n); s != nil {
			out[i] = *s
		} else {
			out[i] = checker.SizeEstimate{Min: 0, Max: e.sizes.elements}
		}
	}
	return out
}

// Per-unit costs of metacel's functions, in CEL cost units (a string traversal costs 0.1 per
// character in Kubernetes' model).
const (
	bytesPerElement = 64 // assumed serialized size of one element, for encode estimates
	traversalFactor = 0.1
)

func estimateOwnCall(function string, args []checker.SizeEstimate) *checker.CallEstimate {
	switch function {
	case "hash.sha256", "hash.fnv64a":
		return &checker.CallEstimate{CostEstimate: checker.CostEstimate{Min: 1, Max: 1 + uint64(float64(args[0].Max)*traversalFactor)}}
	case "merge":
		return &checker.CallEstimate{
			CostEstimate: checker.CostEstimate{Min: 1, Max: 1 + args[0].Max + args[1].Max},
			ResultSize:   &checker.SizeEstimate{Min: args[0].Min, Max: args[0].Max + args[1].Max},
		}
	case "json.encode", "yaml.encode":
		out := args[0].Max * bytesPerElement
		return &checker.CallEstimate{
			CostEstimate: checker.CostEstimate{Min: 1, Max: 1 + uint64(float64(out)*traversalFactor)},
			ResultSize:   &checker.SizeEstimate{Min: 2, Max: out},
		}
	}
	return nil
}

// runtimeCosts is the run-time cost model: actual sizes of arguments and results. It is
// Kubernetes' (library.CostEstimator) and cel-go's, except that a call that builds a string or a
// list is also charged for what it builds, where they charge only for what it reads: 0.1 per
// character (Kubernetes' traversal cost) and one per list element. Without that,
// s.replace("a", s) on a 30,000-character s costs 6,000 and builds 900,000,000 characters.
type runtimeCosts struct{}

var k8sRuntimeCosts = &library.CostEstimator{}

func (runtimeCosts) CallCost(function, overloadID string, args []ref.Val, result ref.Val) *uint64 {
	if c, ok := listsCosts(overloadID, args, result); ok {
		return costOf(c)
	}
	if c, ok := ownCallCost(function, args, result); ok {
		return costOf(c)
	}
	if c := k8sRuntimeCosts.CallCost(function, overloadID, args, result); c != nil {
		return c
	}
	if overloadID == "" {
		if c, ok := dynCallCost(function, args); ok {
			return costOf(c)
		}
	}
	return nil
}

// dynCallCost is cel-go's charge for a call on dyn values, whose overload is chosen at run time:
// cel-go charges by overload id, and would charge 1 for s + s on a dyn string.
func dynCallCost(function string, args []ref.Val) (uint64, bool) {
	switch function {
	case "_+_":
		if len(args) == 2 && isText(args[0]) && isText(args[1]) {
			return traversal(actualSize(args[0]) + actualSize(args[1])), true
		}
	case "_<_", "_<=_", "_>_", "_>=_":
		if len(args) == 2 && isText(args[0]) && isText(args[1]) {
			return traversal(min(actualSize(args[0]), actualSize(args[1]))), true
		}
	case "@in":
		if len(args) == 2 {
			if _, ok := args[1].(traits.Lister); ok {
				return actualSize(args[1]), true
			}
		}
	case "string": // of bytes; of a string it is the string
		if _, ok := args[0].(types.Bytes); ok {
			return traversal(actualSize(args[0])), true
		}
	case "bytes":
		if _, ok := args[0].(types.String); ok {
			return traversal(actualSize(args[0])), true
		}
	case "startsWith", "endsWith":
		if len(args) >= 1 && isText(args[0]) {
			return traversal(actualSize(args[0])), true
		}
	case "matches":
		if len(args) == 2 {
			return traversal(1+actualSize(args[0])) * uint64(math.Ceil(float64(actualSize(args[1]))*common.RegexStringLengthCostFactor)), true
		}
	case "contains":
		if len(args) == 2 && isText(args[0]) {
			return traversal(actualSize(args[0])) * traversal(actualSize(args[1])), true
		}
	}
	return 0, false
}

func isText(v ref.Val) bool {
	switch v.(type) {
	case types.String, types.Bytes:
		return true
	}
	return false
}

// costOf returns a cost as cel-go takes it; a function of its own so that c is allocated only
// when there is a cost to return.
func costOf(c uint64) *uint64 { return &c }

// ownCallCost is the run-time charge of a call, for the calls whose charge is metacel's.
func ownCallCost(function string, args []ref.Val, result ref.Val) (c uint64, ok bool) {
	switch function {
	case "hash.sha256", "hash.fnv64a":
		c = 1 + uint64(float64(actualSize(args[0]))*traversalFactor)
	case "merge":
		c = 1 + actualSize(args[0]) + actualSize(args[1])
	case "json.encode", "yaml.encode":
		c = 1 + saturatingAdd(buildCost(args[0], math.MaxUint64), traversal(actualSize(result)))
	case "replace":
		if len(args) < 3 {
			return 0, false
		}
		c = replaceCost(actualSize(args[0]), actualSize(result))
	case "split":
		c = traversal(2*actualSize(args[0])) + actualSize(result)
	case "format":
		if len(args) < 2 {
			return 0, false
		}
		c = saturatingAdd(saturatingAdd(traversal(actualSize(args[0])), buildCost(args[1], math.MaxUint64)), traversal(actualSize(result)))
	case "base64.encode", "base64.decode":
		c = traversal(actualSize(args[0]) + actualSize(result))
	default:
		return 0, false
	}
	return c, true
}

func actualSize(v ref.Val) uint64 {
	if s, ok := v.(traits.Sizer); ok {
		if n, ok := s.Size().(types.Int); ok && n > 0 {
			return uint64(n)
		}
	}
	return 1
}

// EstimateCallCost leaves function costs to the estimator; sizes only knows sizes.
func (s *sizes) EstimateCallCost(string, string, *checker.AstNode, []checker.AstNode) *checker.CallEstimate {
	return nil
}

// listsCosts are the run-time charges of cel-go's lists and sets libraries, which its cost
// trackers make (ext/lists.go, ext/sets.go) and programs are planned without (bases), except
// that flatten is charged for the elements of its result too.
func listsCosts(overloadID string, args []ref.Val, result ref.Val) (uint64, bool) {
	switch overloadID {
	case "list_slice", "lists_range", "list_reverse":
		return listCallCost(1, actualSize(result)), true
	case "list_flatten", "list_flatten_int":
		return *trackFlatten(args, result), true
	case "list_distinct":
		return selfCompareCost(args[0]), true
	case "list_sets_contains_list", "list_sets_intersects_list":
		return 1 + actualSize(args[0])*actualSize(args[1]), true
	case "list_sets_equivalent_list":
		return 1 + 2*actualSize(args[0])*actualSize(args[1]), true
	}
	switch sortOverloads[overloadID] {
	case 1:
		return selfCompareCost(args[0]), true
	case 2:
		return selfCompareCost(args[1]), true
	}
	return 0, false
}

// sortOverloads are the overloads of sort (1: sorts its target) and sortBy (2: by its second
// argument), one per comparable type, as cel-go's lists library names them.
var sortOverloads = func() map[string]int {
	m := map[string]int{}
	for _, t := range []*types.Type{types.IntType, types.UintType, types.DoubleType, types.BoolType,
		types.DurationType, types.TimestampType, types.StringType, types.BytesType} {
		m[fmt.Sprintf("list_%s_sort", t.TypeName())] = 1
		m[fmt.Sprintf("list_%s_sortByAssociatedKeys", t.TypeName())] = 2
	}
	return m
}()

// listCallCost is a call that builds a list: a cost per element, the call and the list.
func listCallCost(factor float64, size uint64) uint64 {
	return uint64(float64(size)*factor) + 1 + common.ListCreateBaseCost
}

// selfCompareCost compares each element of a list with each other.
func selfCompareCost(list ref.Val) uint64 {
	l, ok := list.(traits.Lister)
	if !ok {
		return listCallCost(2, 0)
	}
	sz := actualSize(l)
	if l.Size() == types.IntZero {
		return listCallCost(2, 0)
	}
	factor := 2.0
	if t := l.Get(types.IntZero).Type(); t == types.StringType || t == types.BytesType {
		factor += common.StringTraversalCostFactor
	}
	return listCallCost(factor, sz*sz)
}
