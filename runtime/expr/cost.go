package expr

import (
	"github.com/google/cel-go/checker"
	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/common/types/ref"
	"github.com/google/cel-go/common/types/traits"
	apiservercel "k8s.io/apiserver/pkg/cel"
	"k8s.io/apiserver/pkg/cel/library"
)

// Sizes assumed by the cost estimate where no schema bounds a value. An object in Kubernetes is at
// most about 1.5 MiB, but bounding every unknown list by that would reject any expression that
// walks one; these figures keep linear expressions well inside PerExpressionCostLimit and reject
// nested walks, and the run-time Budget still stops whatever the estimate let through.
const (
	AssumedMaxElements     = 1_000
	AssumedMaxStringLength = 4_096
)

// sizes estimates the size of values: from the parent's schema where it bounds them (maxItems,
// maxLength, maxProperties), else the assumed maxima.
type sizes struct {
	roots map[string]*apiservercel.DeclType
	// elements is the assumed size of a list or map no schema bounds: AssumedMaxElements, or
	// more to find out whether an expression's cost depends on it
	elements uint64
}

// withElements returns the same estimator assuming n elements in unbounded lists and maps.
func (s *sizes) withElements(n uint64) *sizes {
	return &sizes{roots: s.roots, elements: n}
}

func (s *sizes) EstimateSize(n checker.AstNode) *checker.SizeEstimate {
	if est := s.fromSchema(n.Path()); est != nil {
		return est
	}
	switch n.Type().Kind() {
	case types.StringKind, types.BytesKind:
		return &checker.SizeEstimate{Min: 0, Max: AssumedMaxStringLength}
	case types.ListKind, types.MapKind, types.DynKind, types.StructKind:
		return &checker.SizeEstimate{Min: 0, Max: s.elements}
	}
	return nil
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

// runtimeCosts is the run-time cost model: actual sizes of arguments and results.
type runtimeCosts struct{}

var k8sRuntimeCosts = &library.CostEstimator{}

func (runtimeCosts) CallCost(function, overloadID string, args []ref.Val, result ref.Val) *uint64 {
	var c uint64
	switch function {
	case "hash.sha256", "hash.fnv64a":
		c = 1 + uint64(float64(actualSize(args[0]))*traversalFactor)
	case "merge":
		c = 1 + actualSize(args[0]) + actualSize(args[1])
	case "json.encode", "yaml.encode":
		c = 1 + uint64(float64(actualSize(result))*traversalFactor)
	default:
		return k8sRuntimeCosts.CallCost(function, overloadID, args, result)
	}
	return &c
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
