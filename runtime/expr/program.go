package expr

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/google/cel-go/cel"
	"github.com/google/cel-go/checker"
	celast "github.com/google/cel-go/common/ast"
	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/common/types/ref"
	"github.com/google/cel-go/interpreter"
)

// Want is what an expression must return; it is checked when the expression compiles (where its
// type is known) and again on every result (where it is dyn).
type Want int

// The expected results.
const (
	WantAny     Want = iota
	WantBool         // includeWhen, readyWhen, validations
	WantString       // messageExpression, related names
	WantList         // forEach
	WantObjects      // a child expression: one object (map) or a list of them
	WantScalar       // a value interpolated into a string: string, number or bool
)

func (w Want) String() string {
	return [...]string{"any value", "a bool", "a string", "a list", "an object or a list of objects", "a string, number or bool"}[w]
}

// accepts reports whether a value of type t can satisfy w.
func (w Want) accepts(t *cel.Type) bool {
	k := t.Kind()
	if k == types.DynKind || k == types.AnyKind || w == WantAny {
		return true
	}
	switch w {
	case WantBool:
		return k == types.BoolKind
	case WantString:
		return k == types.StringKind
	case WantList:
		return k == types.ListKind
	case WantObjects:
		return k == types.MapKind || k == types.StructKind || k == types.ListKind
	case WantScalar:
		switch k {
		case types.StringKind, types.IntKind, types.UintKind, types.DoubleKind, types.BoolKind:
			return true
		}
	}
	return false
}

// UnwrapOptional returns the type an optional holds: an optional with a value fills a template's
// field, one without leaves it out.
func UnwrapOptional(t *cel.Type) *cel.Type {
	for t.Kind() == types.OpaqueKind && t.TypeName() == "optional_type" && len(t.Parameters()) == 1 {
		t = t.Parameters()[0]
	}
	return t
}

// ResultTypeError is an expression whose type is not what it must return, with how to write it
// so that it is (resultFix).
type ResultTypeError struct {
	Source string
	Want   Want
	Got    *cel.Type
	// Fix says what to write instead, or is empty.
	Fix string
}

func (e *ResultTypeError) Error() string {
	msg := fmt.Sprintf("%s must return %s, but returns %s", quote(e.Source), e.Want, cel.FormatCELType(e.Got))
	if e.Fix != "" {
		msg += ": " + e.Fix
	}
	return msg
}

// Program is one compiled expression, ready to evaluate; safe for concurrent use.
type Program struct {
	// Source is the expression as written.
	Source string
	// Out is the checked result type.
	Out  *cel.Type
	want Want
	// mayGiveString is what may make a value typed dyn a string (MayGiveString)
	mayGiveString *StringSource
	// refs is what it names of the children and the variables (Refs)
	refs Refs
	// metered is the program planned with cost tracking (meter.go); nil for a bounded program.
	metered cel.Program
	// bounded is a program whose cost cannot exceed its estimate, whatever its input (bounded):
	// it runs unmetered and is charged its estimate, static, before it runs.
	bounded cel.Program
	static  uint64
}

// Compile parses, type-checks and plans one expression, and rejects it when its estimated cost
// exceeds perExpressionCostLimit or its type cannot satisfy want.
func (e *Env) Compile(src string, want Want) (*Program, error) {
	return e.compile(src, want, false)
}

// compile compiles an expression; wholeValue is one that gives a template field's whole value,
// whose conditionals may leave the field out with a null branch (conditional.go).
func (e *Env) compile(src string, want Want, wholeValue bool) (*Program, error) {
	if strings.TrimSpace(src) == "" {
		return nil, fmt.Errorf("empty expression")
	}
	ast, iss := e.check(src, wholeValue)
	if iss.Err() != nil {
		return nil, e.compileError(src, iss, wholeValue)
	}
	unescapeSelections(ast) // before what it reads is recorded: the fields as objects hold them
	e.reads.record(ast)
	if out := ast.OutputType(); !want.accepts(out) {
		return nil, &ResultTypeError{Source: src, Want: want, Got: out, Fix: e.resultFix(src, want, out)}
	}
	est, err := e.cel.EstimateCost(ast, newEstimator(e.sizes.forAST(ast)))
	if err != nil {
		return nil, fmt.Errorf("estimate cost of %s: %w", quote(src), err)
	}
	if est.Max > perExpressionCostLimit {
		return nil, fmt.Errorf("%s has an estimated cost of %d, over the limit of %d per expression: "+
			"bound the lists, maps and strings it walks (maxItems/maxProperties/maxLength in the parent's CRD schema) or simplify it",
			quote(src), est.Max, perExpressionCostLimit)
	}
	p := &Program{Source: src, Out: ast.OutputType(), want: want, refs: refsOf(ast)}
	if UnwrapOptional(p.Out).Kind() == types.DynKind {
		p.mayGiveString = e.stringSource(ast)
	}
	bounded, err := e.bounded(ast, est)
	if err != nil {
		return nil, fmt.Errorf("estimate cost of %s: %w", quote(src), err)
	}
	if bounded {
		p.static = est.Max
		p.bounded, err = e.run.Program(ast, cel.EvalOptions(cel.OptOptimize), sortedMapRanges(ast))
	} else {
		p.metered, err = e.run.Program(ast, append(programOptions(), sortedMapRanges(ast))...)
	}
	if err != nil {
		return nil, fmt.Errorf("plan %s: %w", quote(src), err)
	}
	return p, nil
}

// boundedCalls are the functions and operators whose cost and result are bounded by the sizes
// the cost estimate knows: they build nothing larger than a literal of the expression, or they
// cost by the size of what they read, which the estimate counts.
var boundedCalls = map[string]bool{
	"_==_": true, "_!=_": true, "_<_": true, "_<=_": true, "_>_": true, "_>=_": true,
	"_&&_": true, "_||_": true, "!_": true, "_?_:_": true, "@not_strictly_false": true,
	"-_": true, "_+_": true, "_-_": true, "_*_": true, "_/_": true, "_%_": true,
	"_[_]": true, "_[?_]": true, "_?._": true, "@in": true,
	"size": true, "int": true, "uint": true, "double": true, "string": true, "bool": true,
	"dyn": true, "type": true,
	"optional.of": true, "optional.ofNonZeroValue": true, "optional.none": true,
	"orValue": true, "or": true, "hasValue": true, "value": true,
}

// boundedCostMax is the largest estimate charged instead of metering: a larger one is better
// metered, which charges what the expression actually spends.
const boundedCostMax = 1_000

// bounded reports whether an expression is cheap and its run-time cost cannot exceed its
// estimate, whatever its input, so that it needs no metering (which costs a few microseconds per
// evaluation): it loops over no list but a literal one (cel.bind and optMap loop over []), calls
// only boundedCalls, and its estimate stays the same when the sizes no schema bounds grow a
// thousandfold, so that nothing it does grows with its input.
func (e *Env) bounded(ast *cel.Ast, est checker.CostEstimate) (bool, error) {
	ok := est.Max <= boundedCostMax
	celast.PreOrderVisit(ast.NativeRep().Expr(), celast.NewExprVisitor(func(x celast.Expr) {
		switch x.Kind() {
		case celast.ComprehensionKind:
			ok = ok && x.AsComprehension().IterRange().Kind() == celast.ListKind
		case celast.CallKind:
			ok = ok && boundedCalls[x.AsCall().FunctionName()]
		}
	}))
	if !ok {
		return false, nil
	}
	larger, err := e.cel.EstimateCost(ast, newEstimator(e.sizes.forAST(ast).scaled(1000)))
	if err != nil {
		return false, err
	}
	return larger.Max == est.Max, nil
}

// quotedMax is the length past which an expression is shortened in messages: the message must
// still show its point (an event's note holds 1 KB).
const quotedMax = 120

// quote quotes an expression for a message, shortened when long.
func quote(src string) string {
	if r := []rune(src); len(r) > quotedMax {
		return strconv.Quote(string(r[:quotedMax])) + fmt.Sprintf("... (%d characters)", len(r))
	}
	return strconv.Quote(src)
}

// check parses and type-checks an expression, with the null branches of a whole value's
// conditionals typed dyn.
func (e *Env) check(src string, wholeValue bool) (*cel.Ast, *cel.Issues) {
	ast, iss := e.cel.Parse(src)
	if iss.Err() != nil {
		return nil, iss
	}
	if wholeValue {
		dynNullBranches(ast)
	}
	return e.cel.Check(ast)
}

// compileError turns CEL issues into one line per problem, with the column in the expression,
// what a misspelt name likely meant, and how to write a conditional whose branches differ.
func (e *Env) compileError(src string, iss *cel.Issues, wholeValue bool) error {
	suggest := e.suggestions(src, iss)
	var msgs []string
	for _, is := range iss.Errors() {
		msg := is.Message + suggest[is.ExprID]
		if col := is.Location.Column(); col >= 0 {
			msg = fmt.Sprintf("%s (column %d of the expression)", msg, col+1)
		}
		if strings.Contains(is.Message, "no matching overload for '_?_:_'") {
			msg += conditionalHint(wholeValue)
		}
		msgs = append(msgs, msg)
	}
	return fmt.Errorf("compile %s: %s", quote(src), strings.Join(msgs, "; "))
}

// conditionalHint says what works when the branches of a conditional have different types.
func conditionalHint(wholeValue bool) string {
	const mix = "wrap a branch in dyn(...) to mix types"
	if wholeValue {
		return ": both branches of \"c ? a : b\" must have the same type (null may be either, to leave the field out); " + mix
	}
	return ": both branches of \"c ? a : b\" must have the same type. To leave a template field out, make the conditional its whole value: " +
		"\"${c ? value : null}\"; elsewhere use optionals (c ? optional.of(value) : optional.none()), or " + mix
}

// Budget is the cost that the expressions of one sync may still spend. It is not safe for
// concurrent use: one sync evaluates one expression at a time. A copy of a Budget (b2 := *b) is
// spent apart from it.
type Budget struct{ remaining uint64 }

// NewBudget returns a full budget of SyncCostBudget.
func NewBudget() *Budget { return &Budget{remaining: SyncCostBudget} }

// Remaining is what is left to spend.
func (b *Budget) Remaining() uint64 { return b.remaining }

// spend charges cost, or empties the budget and reports false when it is more than what is left.
func (b *Budget) spend(cost uint64) bool {
	if cost > b.remaining {
		b.remaining = 0
		return false
	}
	b.remaining -= cost
	return true
}

// overBudget is the error of an expression stopped by the budget, with left the budget it
// started with; what, when known, is what would have cost too much, and cost its cost
// (math.MaxUint64: counted only up to past left).
func overBudget(src string, left uint64, what string, cost uint64) error {
	switch {
	case what == "":
		what = "costs more than"
	case cost == math.MaxUint64:
		what += " would cost more than"
	default:
		what = fmt.Sprintf("%s would cost %d, more than", what, cost)
	}
	return fmt.Errorf("evaluate %s: %s the %d left of the cost budget of %d per sync", quote(src), what, left, SyncCostBudget)
}

// Activation binds variable names to values (plain Go maps and lists, as unstructured objects hold).
type Activation = interpreter.Activation

// NewActivation binds vars.
func NewActivation(vars map[string]any) Activation {
	a, _ := interpreter.NewActivation(vars) // a map is always accepted
	return a
}

// Extend binds vars on top of a.
func Extend(a Activation, vars map[string]any) Activation {
	return interpreter.NewHierarchicalActivation(a, NewActivation(vars))
}

// Eval evaluates the program, charges its actual cost to b, and checks its result against what
// it must return. The evaluation stops once it has spent a whole SyncCostBudget, or before a call
// that would build more than what is left of b (meter.go); one that cost more than what was left
// fails and uses b up. Errors name the expression.
func (p *Program) Eval(ctx context.Context, act Activation, b *Budget) (ref.Val, error) {
	if p.metered == nil {
		return p.evalBounded(ctx, act, b)
	}
	left := b.remaining
	e := &evaluation{Activation: act, left: left}
	val, det, err := p.metered.ContextEval(ctx, e)
	var cost uint64
	if c := det.ActualCost(); c != nil {
		cost = *c
	}
	if !b.spend(cost) || (err != nil && stoppedByCost(err)) {
		b.remaining = 0
		return nil, overBudget(p.Source, left, e.refused, e.refusedCost)
	}
	return p.result(val, err)
}

// evalBounded evaluates a bounded program, charged its estimate before it runs.
func (p *Program) evalBounded(ctx context.Context, act Activation, b *Budget) (ref.Val, error) {
	if left := b.remaining; !b.spend(p.static) {
		return nil, overBudget(p.Source, left, "it", p.static)
	}
	val, _, err := p.bounded.ContextEval(ctx, act)
	return p.result(val, err)
}

// result checks the result of an evaluation.
func (p *Program) result(val ref.Val, err error) (ref.Val, error) {
	if err != nil {
		return nil, fmt.Errorf("evaluate %s: %w", quote(p.Source), err)
	}
	if !p.want.acceptsValue(val) {
		return nil, fmt.Errorf("evaluate %s: must return %s, got %s", quote(p.Source), p.want, val.Type().TypeName())
	}
	return val, nil
}

// stoppedByCost reports whether cel-go stopped an evaluation for its cost.
func stoppedByCost(err error) bool {
	var cancelled interpreter.EvalCancelledError
	return errors.As(err, &cancelled) && cancelled.Cause == interpreter.CostLimitExceeded
}

// EvalNative evaluates the program like Eval and converts its result with toNative, charging
// the conversion to b too: the result is written out in full, as a child object or a status,
// however often it refers to one value (buildCost).
func (p *Program) EvalNative(ctx context.Context, act Activation, b *Budget) (any, error) {
	val, err := p.Eval(ctx, act, b)
	if err != nil {
		return nil, err
	}
	// counted before it is built, so that a result over the budget is never built
	if err := p.chargeResult(b, buildCost(val, b.remaining)); err != nil {
		return nil, err
	}
	v, err := toNative(val)
	if err != nil {
		return nil, fmt.Errorf("result of %s: %w", quote(p.Source), err)
	}
	return v, nil
}

// chargeResult charges b for writing out the program's result.
func (p *Program) chargeResult(b *Budget, cost uint64) error {
	left := b.remaining
	if !b.spend(cost) {
		return overBudget(p.Source, left, "writing out its result", cost)
	}
	return nil
}

// EvalBool evaluates a program that returns a bool.
func (p *Program) EvalBool(ctx context.Context, act Activation, b *Budget) (bool, error) {
	v, err := p.Eval(ctx, act, b)
	if err != nil {
		return false, err
	}
	return bool(v.(types.Bool)), nil
}

func (w Want) acceptsValue(v ref.Val) bool {
	if w == WantAny {
		return true
	}
	t, ok := v.Type().(*types.Type)
	return ok && t.Kind() != types.DynKind && w.accepts(t)
}
