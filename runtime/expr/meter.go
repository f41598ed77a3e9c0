package expr

import (
	"math"
	"reflect"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/google/cel-go/cel"
	"github.com/google/cel-go/common"
	"github.com/google/cel-go/common/functions"
	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/common/types/ref"
	"github.com/google/cel-go/common/types/traits"
	"github.com/google/cel-go/interpreter"
)

// Every evaluation is metered as it runs, with cel-go's cost tracking, as Kubernetes meters CEL
// (CRD validation rules, admission policies): each step and call adds its actual cost, an
// evaluation stops when it has spent more than a whole SyncCostBudget (the tracker's limit, fixed
// when the program is planned: one planned program serves every evaluation), and its actual cost
// is then charged to the sync's Budget; an evaluation that cost more than what was left of it
// fails. (The only exception are cheap expressions that nothing can make dearer, charged their
// estimate before they run: Env.bounded.) An expression may so spend as much as the sync has left,
// as Kubernetes' own per-call limit (1,000,000) would not let it, and the sync's last evaluation
// may overrun what was left by at most one budget. On top of Kubernetes' model, metacel
//
//   - charges a call that builds a string or a list for what it builds, not only for what it
//     reads (runtimeCosts);
//   - checks the calls that can build far more than their arguments hold (guardedCalls) before
//     they run: replace builds a string as long as its target times its replacement, join,
//     format and the encoders write out every string a list refers to, however often, and
//     flatten every element of the lists it flattens. Such a call whose cost, computed from its
//     arguments, exceeds what was left of the budget when the evaluation started stops the
//     evaluation before it allocates anything;
//   - charges writing out a result (Program.EvalNative, templates) by what it writes
//     (buildCost), counted before it is written.

// evaluation is the activation of one metered evaluation: the caller's, and what the guards of
// its calls need (they find it among the activations they are given: evaluationOf).
type evaluation struct {
	Activation
	// left is what was left of the budget when the evaluation started.
	left uint64
	// refused names the call a guard stopped, and refusedCost is what it would have cost.
	refused     string
	refusedCost uint64
}

// Parent is the caller's activation, which holds every variable.
func (e *evaluation) Parent() Activation { return e.Activation }

// evaluationOf finds the evaluation among the activations of a step of it; nil outside Eval.
func evaluationOf(vars Activation) *evaluation {
	for a := vars; a != nil; a = a.Parent() {
		if e, ok := a.(*evaluation); ok {
			return e
		}
	}
	return nil
}

// programOptions are the run-time options of a metered program.
func programOptions() []cel.ProgramOption {
	return []cel.ProgramOption{
		cel.EvalOptions(cel.OptOptimize, cel.OptTrackCost),
		cel.CostTracking(runtimeCosts{}),
		cel.CostTrackerOptions(interpreter.PresenceTestHasCost(false)),
		cel.CostLimit(SyncCostBudget),
		cel.CustomDecorator(guardCalls),
		cel.InterruptCheckFrequency(100),
	}
}

// preCost computes from a call's arguments a lower bound of what the call will be charged, for
// calls that may build much more than their arguments hold; it may stop counting past max.
type preCost func(args []ref.Val, max uint64) uint64

// guardedCalls are the functions checked before they run, by name.
var guardedCalls = map[string]preCost{
	"replace":     preReplace,
	"join":        preJoin,
	"format":      preFormat,
	"json.encode": preEncode,
	"yaml.encode": preEncode,
	"flatten":     preFlatten,
}

// guardCalls is a cel-go decorator: it puts a guard in place of each call of a guarded function.
func guardCalls(i interpreter.Interpretable) (interpreter.Interpretable, error) {
	call, ok := i.(interpreter.InterpretableCall)
	if !ok {
		return i, nil
	}
	cost, ok := guardedCalls[call.Function()]
	if !ok {
		return i, nil
	}
	return newGuard(call, cost)
}

// guard evaluates a call as cel-go's planner would (same overload, strictness and dispatch),
// with a check of its cost between the evaluation of its arguments and the call.
type guard struct {
	interpreter.InterpretableCall
	cost preCost
	// the implementation cel-go's planner would choose for the call's number of arguments
	unary     functions.UnaryOp
	binary    functions.BinaryOp
	varArgs   functions.FunctionOp
	trait     int
	nonStrict bool
}

func newGuard(call interpreter.InterpretableCall, cost preCost) (interpreter.Interpretable, error) {
	impls, err := bindings()
	if err != nil {
		return nil, err
	}
	g := &guard{InterpretableCall: call, cost: cost}
	var def *functions.Overload
	if call.OverloadID() != "" {
		def = impls[call.OverloadID()]
	}
	if def == nil {
		def = impls[call.Function()]
	}
	if def == nil {
		return call, nil // not a function metacel knows: leave it to cel-go
	}
	g.trait, g.nonStrict = def.OperandTrait, def.NonStrict
	switch n := len(call.Args()); {
	case n == 1 && (def.Unary != nil || def.Function == nil):
		g.unary = def.Unary
	case n == 2 && (def.Binary != nil || def.Function == nil):
		g.binary = def.Binary
	default:
		g.varArgs = def.Function
	}
	if g.unary == nil && g.binary == nil && g.varArgs == nil {
		return call, nil
	}
	return g, nil
}

func (g *guard) Eval(vars interpreter.Activation) ref.Val {
	args := g.Args()
	vals := make([]ref.Val, len(args))
	strict := !g.nonStrict
	for i, a := range args {
		vals[i] = a.Eval(vars)
		// cel-go evaluates both arguments of a binary call before it looks at either
		if strict && len(args) != 2 && types.IsUnknownOrError(vals[i]) {
			return vals[i]
		}
	}
	if strict && len(args) == 2 {
		for _, v := range vals {
			if types.IsUnknownOrError(v) {
				return v
			}
		}
	}
	left := uint64(SyncCostBudget)
	e := evaluationOf(vars)
	if e != nil {
		left = e.left
	}
	if c := g.cost(vals, left); c > left {
		refused := g.Function() + "()"
		if e != nil {
			e.refused, e.refusedCost = refused, c
		}
		panic(interpreter.EvalCancelledError{Cause: interpreter.CostLimitExceeded, Message: "operation cancelled: " + refused + " would exceed the cost limit"})
	}
	arg0 := vals[0]
	if g.trait == 0 || (!strict && types.IsUnknownOrError(arg0)) || arg0.Type().HasTrait(g.trait) {
		switch {
		case g.unary != nil:
			return types.LabelErrNode(g.ID(), g.unary(arg0))
		case g.binary != nil:
			return types.LabelErrNode(g.ID(), g.binary(arg0, vals[1]))
		default:
			return types.LabelErrNode(g.ID(), g.varArgs(vals...))
		}
	}
	if arg0.Type().HasTrait(traits.ReceiverType) {
		return types.LabelErrNode(g.ID(), arg0.(traits.Receiver).Receive(g.Function(), g.OverloadID(), vals[1:]))
	}
	return types.NewErrWithNodeID(g.ID(), "no such overload: %s", g.Function())
}

var (
	bindingsOnce sync.Once
	bindingsMap  map[string]*functions.Overload
	bindingsErr  error
)

// bindings are the implementations of the base environment's functions by overload id and by
// function name, as cel-go's dispatcher holds them; scopes add types, never functions.
func bindings() (map[string]*functions.Overload, error) {
	bindingsOnce.Do(func() {
		env, err := base()
		if err != nil {
			bindingsErr = err
			return
		}
		bindingsMap = map[string]*functions.Overload{}
		for _, fn := range env.Functions() {
			overloads, err := fn.Bindings()
			if err != nil {
				bindingsErr = err
				return
			}
			for _, o := range overloads {
				bindingsMap[o.Operator] = o
			}
		}
	})
	return bindingsMap, bindingsErr
}

// traversal is the cost of reading or writing n characters: Kubernetes' 0.1 per character.
func traversal(n uint64) uint64 {
	return uint64(math.Ceil(float64(n) * traversalFactor))
}

// preReplace: s.replace(old, new[, n]) reads s twice (Kubernetes' charge) and writes its result,
// whose length is known before it is built.
func preReplace(args []ref.Val, _ uint64) uint64 {
	if len(args) < 3 {
		return 0
	}
	s, ok1 := args[0].(types.String)
	old, ok2 := args[1].(types.String)
	repl, ok3 := args[2].(types.String)
	if !ok1 || !ok2 || !ok3 {
		return 0
	}
	n := int64(-1)
	if len(args) > 3 {
		if i, ok := args[3].(types.Int); ok {
			n = int64(i)
		}
	}
	return replaceCost(uint64(len(s)), replacedLength(string(s), string(old), string(repl), n))
}

func replaceCost(in, out uint64) uint64 { return traversal(2*in) + traversal(out) }

// replacedLength is the length of strings.Replace(s, old, repl, n), without building it.
func replacedLength(s, old, repl string, n int64) uint64 {
	if n == 0 {
		return uint64(len(s))
	}
	// an empty old matches before each character and at the end
	count := int64(utf8.RuneCountInString(s)) + 1
	if old != "" {
		count = int64(strings.Count(s, old))
	}
	if n > 0 && count > n {
		count = n
	}
	return uint64(int64(len(s)) + count*(int64(len(repl))-int64(len(old))))
}

// preJoin: list.join([sep]) costs twice the length of its result (Kubernetes' charge), which is
// known before it is built.
func preJoin(args []ref.Val, max uint64) uint64 {
	l, ok := args[0].(traits.Lister)
	if !ok {
		return 0
	}
	var sep uint64
	if len(args) > 1 {
		if s, ok := args[1].(types.String); ok {
			sep = uint64(len(s))
		}
	}
	n := int64(l.Size().(types.Int))
	var size uint64
	for i := int64(0); i < n; i++ {
		if s, ok := l.Get(types.Int(i)).(types.String); ok {
			size += uint64(len(s))
		}
		if i > 0 {
			size += sep
		}
		if traversal(2*size) > max {
			return math.MaxUint64
		}
	}
	return traversal(2 * size)
}

// preFormat: s.format(args) reads its format and every value it prints.
func preFormat(args []ref.Val, max uint64) uint64 {
	if len(args) < 2 {
		return 0
	}
	s, ok := args[0].(types.String)
	if !ok {
		return 0
	}
	return saturatingAdd(traversal(uint64(len(s))), buildCost(args[1], max))
}

// preEncode: json.encode and yaml.encode convert every value their argument refers to.
func preEncode(args []ref.Val, max uint64) uint64 {
	return buildCost(args[0], max)
}

// preFlatten: list.flatten([depth]) costs one per element of its result on top of cel-go's
// charge.
func preFlatten(args []ref.Val, max uint64) uint64 {
	l, ok := args[0].(traits.Lister)
	if !ok {
		return 0
	}
	depth := int64(1)
	if len(args) > 1 {
		if d, ok := args[1].(types.Int); ok {
			depth = int64(d)
		}
	}
	count := flattenedSize(l, depth, max)
	return saturatingAdd(flattenBase(l, depth), count)
}

// trackFlatten is the run-time charge of flatten: cel-go's, which counts the outer list only, and
// the elements of the result.
func trackFlatten(args []ref.Val, result ref.Val) *uint64 {
	depth := int64(1)
	if len(args) > 1 {
		if d, ok := args[1].(types.Int); ok {
			depth = int64(d)
		}
	}
	c := saturatingAdd(flattenBase(args[0], depth), actualSize(result))
	return &c
}

// flattenBase is cel-go's charge for flatten: the size of the outer list times the depth, and
// the creation of a list.
func flattenBase(list ref.Val, depth int64) uint64 {
	if depth < 1 {
		depth = 1
	}
	return uint64(float64(actualSize(list))*float64(depth)) + 1 + 10
}

// flattenedSize counts the elements of list flattened to depth, up to past max.
func flattenedSize(l traits.Lister, depth int64, max uint64) uint64 {
	n := uint64(l.Size().(types.Int))
	if depth <= 0 {
		return n
	}
	var count uint64
	for i := uint64(0); i < n && count <= max; i++ {
		if inner, ok := l.Get(types.Int(i)).(traits.Lister); ok {
			count = saturatingAdd(count, flattenedSize(inner, depth-1, max-count))
		} else {
			count++
		}
	}
	if count > max {
		return math.MaxUint64
	}
	return count
}

// buildCost is the cost of writing out a value in full, as Go values or as JSON, every time it
// is referred to: what CEL charges to create a list (10) or a map (30), and 0.1 per byte of what
// is written, as CEL charges for strings: a character of a string, about 30 bytes for an element
// of a list (3) and 60 for an entry of a map (6), which is what they take as Go values. It stops
// counting past max.
func buildCost(v ref.Val, max uint64) uint64 {
	c := &builder{max: max}
	c.walk(v)
	if c.over() {
		return math.MaxUint64
	}
	return c.total()
}

// builder counts the cost of building a value (buildCost).
type builder struct {
	max   uint64
	units uint64 // lists, maps, their elements and entries
	chars uint64 // characters of strings and bytes
}

func (c *builder) total() uint64 { return saturatingAdd(c.units, c.chars/10+min(c.chars%10, 1)) }

func (c *builder) over() bool { return c.total() > c.max }

// Costs of writing out an element of a list and an entry of a map (buildCost).
const (
	elementCost = 3
	entryCost   = 6
)

// list, dict and str count a list of n elements, a map of n entries and a string or bytes of n
// characters; they report whether the count is still within max.
func (c *builder) list(n int64) bool {
	c.units = saturatingAdd(c.units, saturatingAdd(common.ListCreateBaseCost, elementCost*uint64(n)))
	return !c.over()
}

func (c *builder) dict(n int64) bool {
	c.units = saturatingAdd(c.units, saturatingAdd(common.MapCreateBaseCost, entryCost*uint64(n)))
	return !c.over()
}

func (c *builder) str(n int) bool {
	c.chars = saturatingAdd(c.chars, uint64(n))
	return !c.over()
}

func (c *builder) walk(v ref.Val) {
	switch x := v.(type) {
	case types.String:
		c.str(len(x))
	case types.Bytes:
		c.str(len(x))
	case *types.Optional:
		if x.HasValue() {
			c.walk(x.GetValue())
		}
	case traits.Mapper:
		if native, ok := nativeValue(x); ok {
			c.walkNative(native)
			return
		}
		if !c.dict(int64(x.Size().(types.Int))) {
			return
		}
		for it := x.Iterator(); it.HasNext() == types.True && !c.over(); {
			k := it.Next()
			c.walk(k)
			c.walk(x.Get(k))
		}
	case traits.Lister:
		if native, ok := nativeValue(x); ok {
			c.walkNative(native)
			return
		}
		n := int64(x.Size().(types.Int))
		if !c.list(n) {
			return
		}
		for i := int64(0); i < n && !c.over(); i++ {
			c.walk(x.Get(types.Int(i)))
		}
	}
}

// walkNative walks the Go values a CEL list or map holds, as an object's fields are held,
// without converting them to CEL values.
func (c *builder) walkNative(v any) {
	switch x := v.(type) {
	case string:
		c.str(len(x))
	case []byte:
		c.str(len(x))
	case ref.Val:
		c.walk(x)
	case []any:
		if !c.list(int64(len(x))) {
			return
		}
		for _, e := range x {
			if c.over() {
				return
			}
			c.walkNative(e)
		}
	case []ref.Val:
		if !c.list(int64(len(x))) {
			return
		}
		for _, e := range x {
			if c.over() {
				return
			}
			c.walk(e)
		}
	case []string:
		if !c.list(int64(len(x))) {
			return
		}
		for _, e := range x {
			if !c.str(len(e)) {
				return
			}
		}
	case map[string]any:
		if !c.dict(int64(len(x))) {
			return
		}
		for k, e := range x {
			if !c.str(len(k)) {
				return
			}
			c.walkNative(e)
		}
	}
}

var (
	baseListType = reflect.TypeOf(types.NewDynamicList(types.DefaultTypeAdapter, []any{}))
	baseMapType  = reflect.TypeOf(types.NewStringInterfaceMap(types.DefaultTypeAdapter, map[string]any{}))
)

// nativeValue returns the Go slice or map that a CEL list or map of cel-go's own holds, when
// reading it costs nothing (a concatenation of lists, say, would build one); ok is false when
// walkNative cannot walk it.
func nativeValue(v ref.Val) (any, bool) {
	if t := reflect.TypeOf(v); t != baseListType && t != baseMapType {
		return nil, false
	}
	switch native := v.Value().(type) {
	case []any, []ref.Val, []string, map[string]any:
		return native, true
	}
	return nil, false
}

func saturatingAdd(a, b uint64) uint64 {
	if a > math.MaxUint64-b {
		return math.MaxUint64
	}
	return a + b
}
