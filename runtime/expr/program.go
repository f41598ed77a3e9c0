package expr

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/google/cel-go/cel"
	"github.com/google/cel-go/checker"
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

// Program is one compiled expression, ready to evaluate; safe for concurrent use.
type Program struct {
	// Source is the expression as written.
	Source string
	// Out is the checked result type.
	Out  *cel.Type
	want Want
	prg  cel.Program
	// static is the cost charged per evaluation of an unmetered program: its estimate.
	static uint64
}

// Compile parses, type-checks and plans one expression, and rejects it when its estimated cost
// exceeds PerExpressionCostLimit or its type cannot satisfy want.
func (e *Env) Compile(src string, want Want) (*Program, error) {
	if strings.TrimSpace(src) == "" {
		return nil, fmt.Errorf("empty expression")
	}
	ast, iss := e.cel.Compile(src)
	if iss.Err() != nil {
		return nil, compileError(src, iss)
	}
	if out := ast.OutputType(); !want.accepts(out) {
		return nil, fmt.Errorf("%s must return %s, but returns %s", quote(src), want, cel.FormatCELType(out))
	}
	est, err := e.cel.EstimateCost(ast, newEstimator(e.sizes))
	if err != nil {
		return nil, fmt.Errorf("estimate cost of %s: %w", quote(src), err)
	}
	if est.Max > PerExpressionCostLimit {
		return nil, fmt.Errorf("%s has an estimated cost of %d, over the limit of %d per expression: "+
			"bound the lists and strings it walks (maxItems/maxLength in the parent's CRD schema) or simplify it",
			quote(src), est.Max, PerExpressionCostLimit)
	}
	metered, err := e.dependsOnSizes(ast, est)
	if err != nil {
		return nil, fmt.Errorf("estimate cost of %s: %w", quote(src), err)
	}
	prg, err := e.cel.Program(ast, programOptions(metered)...)
	if err != nil {
		return nil, fmt.Errorf("plan %s: %w", quote(src), err)
	}
	p := &Program{Source: src, Out: ast.OutputType(), want: want, prg: prg}
	if !metered {
		p.static = est.Max
	}
	return p, nil
}

// dependsOnSizes reports whether an expression's cost grows with the size of the lists and maps
// it reads (a comprehension, say): only those are metered as they run, which costs about a
// microsecond per evaluation. The others cost at most their estimate, which is charged instead.
func (e *Env) dependsOnSizes(ast *cel.Ast, est checker.CostEstimate) (bool, error) {
	larger, err := e.cel.EstimateCost(ast, newEstimator(e.sizes.withElements(1000*AssumedMaxElements)))
	if err != nil {
		return false, err
	}
	return larger.Max != est.Max, nil
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

// compileError turns CEL issues into one line per problem, with the column in the expression.
func compileError(src string, iss *cel.Issues) error {
	var msgs []string
	for _, e := range iss.Errors() {
		msg := e.Message
		if col := e.Location.Column(); col >= 0 {
			msg = fmt.Sprintf("%s (column %d of the expression)", msg, col+1)
		}
		msgs = append(msgs, msg)
	}
	return fmt.Errorf("compile %s: %s", quote(src), strings.Join(msgs, "; "))
}

// Budget is the cost that the expressions of one sync may still spend.
type Budget struct{ remaining uint64 }

// NewBudget returns a full budget of SyncCostBudget.
func NewBudget() *Budget { return &Budget{remaining: SyncCostBudget} }

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

// Eval evaluates the program, charges its cost to b and checks its result against what it must
// return. Errors name the expression.
func (p *Program) Eval(ctx context.Context, act Activation, b *Budget) (ref.Val, error) {
	val, det, err := p.prg.ContextEval(ctx, act)
	cost := p.static
	if det != nil && det.ActualCost() != nil {
		cost = *det.ActualCost()
	}
	if cost > b.remaining {
		b.remaining = 0
		return nil, fmt.Errorf("evaluate %s: the cost budget of %d per sync is used up", quote(p.Source), SyncCostBudget)
	}
	b.remaining -= cost
	if err != nil {
		return nil, fmt.Errorf("evaluate %s: %w", quote(p.Source), err)
	}
	if !p.want.acceptsValue(val) {
		return nil, fmt.Errorf("evaluate %s: must return %s, got %s", quote(p.Source), p.want, val.Type().TypeName())
	}
	return val, nil
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
