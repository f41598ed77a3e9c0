package expr

import (
	"context"
	"fmt"
	"reflect"
	"runtime"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/google/cel-go/cel"
)

// allocated runs f and returns the bytes it allocated (a count, whatever the machine's load).
func allocated(f func()) uint64 {
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	f()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

// spec builds a parent with the given spec.
func spec(fields map[string]any) Activation {
	return NewActivation(map[string]any{"parent": map[string]any{"spec": fields}})
}

func numbers(n int) []any {
	out := make([]any, n)
	for i := range out {
		out[i] = int64(i)
	}
	return out
}

// Each of these loads (its estimate, over an unbounded parent, is within the per-expression limit),
// and with large enough input would build gigabytes: its guard must refuse the call before it runs
// (the error names the call and what it would cost), having allocated little.
func TestNoInputMakesAnEvaluationAllocateWithoutBound(t *testing.T) {
	s30k := strings.Repeat("a", 30_000)
	s100k := strings.Repeat("x", 100_000)
	tests := []struct {
		name  string
		expr  string
		input map[string]any
	}{
		{"replace building 900,000,000 characters",
			`size(string(parent.spec.s).replace("a", string(parent.spec.s)))`,
			map[string]any{"s": s30k}},
		{"replace with a limit still building 900,000,000 characters",
			`size(string(parent.spec.s).replace("a", string(parent.spec.s), 100000))`,
			map[string]any{"s": s30k}},
		{"join writing one string 3,000 times",
			`size(parent.spec.items.map(x, string(parent.spec.s)).join())`,
			map[string]any{"s": s100k, "items": numbers(3000)}},
		{"join with a separator as long as the strings",
			`size(parent.spec.items.map(x, string(parent.spec.s)).join(string(parent.spec.s)))`,
			map[string]any{"s": s100k, "items": numbers(3000)}},
		{"format printing one string 3,000 times",
			`size("%s".format([parent.spec.items.map(x, parent.spec.s)]))`,
			map[string]any{"s": s100k, "items": numbers(3000)}},
		{"json.encode writing one string 3,000 times",
			`size(json.encode(parent.spec.items.map(x, parent.spec.s)))`,
			map[string]any{"s": s100k, "items": numbers(3000)}},
		{"yaml.encode writing one string 3,000 times",
			`size(yaml.encode(parent.spec.items.map(x, parent.spec.s)))`,
			map[string]any{"s": s100k, "items": numbers(3000)}},
		{"flatten of 5,000 references to one list of 5,000",
			`size(parent.spec.items.map(x, parent.spec.items).flatten())`,
			map[string]any{"items": numbers(5000)}},
	}
	env := mustEnv(t, Scope{})
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p, err := env.Compile(tc.expr, WantAny)
			if err != nil {
				t.Fatalf("must load: %v", err)
			}
			act := spec(tc.input)
			for _, b := range []*Budget{NewBudget(), {remaining: 500_000}} {
				want := fmt.Sprintf("more than the %d left of the cost budget of 10000000 per sync", b.remaining)
				var evalErr error
				bytes := allocated(func() { _, evalErr = p.Eval(t.Context(), act, b) })
				t.Logf("allocated %d KB: %v", bytes>>10, evalErr)
				if evalErr == nil || !strings.Contains(evalErr.Error(), "() would cost ") || !strings.Contains(evalErr.Error(), want) {
					t.Errorf("want a guard to refuse the call, %q, got %v", want, evalErr)
				}
				if bytes > 20<<20 {
					t.Errorf("allocated %d MB, want it stopped before it builds its result", bytes>>20)
				}
			}
		})
	}
}

func TestBudgetErrorNamesTheCallAndWhatWasLeft(t *testing.T) {
	p, err := mustEnv(t, Scope{}).Compile(`size(string(parent.spec.s).replace("a", string(parent.spec.s)))`, WantAny)
	if err != nil {
		t.Fatal(err)
	}
	act := spec(map[string]any{"s": strings.Repeat("a", 30_000)})
	_, err = p.Eval(t.Context(), act, NewBudget())
	want := `evaluate "size(string(parent.spec.s).replace(\"a\", string(parent.spec.s)))": replace() would cost 90006000, ` +
		`more than the 10000000 left of the cost budget of 10000000 per sync`
	if err == nil || err.Error() != want {
		t.Errorf("got  %v\nwant %s", err, want)
	}
	_, err = p.Eval(t.Context(), act, &Budget{remaining: 500_000})
	want = `evaluate "size(string(parent.spec.s).replace(\"a\", string(parent.spec.s)))": replace() would cost 90006000, ` +
		`more than the 500000 left of the cost budget of 10000000 per sync`
	if err == nil || err.Error() != want {
		t.Errorf("got  %v\nwant %s", err, want)
	}
}

// An evaluation is charged what it spent: one that spent more than what was left fails and uses
// the budget up, and one that would spend more than a whole budget stops there, not when it ends.
func TestEvaluationsAreChargedToTheBudget(t *testing.T) {
	tests := []struct {
		name string
		expr string
		// cost is what the evaluation costs; 0: more than a whole budget
		cost uint64
	}{
		// each item builds a string of 1,000,001 characters, which costs 100,001: 1,000 of them
		{"a comprehension", "parent.spec.items.map(x, parent.spec.s + 'x').size()", 0},
		// strings of 2, 3 and 4 million characters
		{"an expression without a loop", "size(parent.spec.s + parent.spec.s + parent.spec.s + parent.spec.s) > 0", 900_000},
	}
	env := mustEnv(t, Scope{})
	act := spec(map[string]any{"s": strings.Repeat("x", 1_000_000), "items": numbers(1000)})
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p, err := env.Compile(tc.expr, WantAny)
			if err != nil {
				t.Fatal(err)
			}
			budgets := []*Budget{{remaining: 150_000}}
			if tc.cost > 0 {
				budgets = append(budgets, NewBudget())
			}
			for _, b := range budgets {
				left := b.Remaining()
				var evalErr error
				bytes := allocated(func() { _, evalErr = p.Eval(t.Context(), act, b) })
				if tc.cost > 0 && tc.cost <= left {
					if spent := left - b.Remaining(); evalErr != nil || spent < tc.cost || spent > tc.cost+1000 {
						t.Errorf("with %d left: charged %d (%v), want about %d", left, spent, evalErr, tc.cost)
					}
					continue
				}
				if want := fmt.Sprintf("costs more than the %d left of the cost budget", left); evalErr == nil || !strings.Contains(evalErr.Error(), want) {
					t.Errorf("with %d left: want %q, got %v", left, want, evalErr)
				}
				if b.Remaining() != 0 {
					t.Errorf("a failed evaluation must use the budget up, %d left", b.Remaining())
				}
				// a budget of 10,000,000 builds about 100 MB of strings, not 1 GB
				if bytes > 160<<20 {
					t.Errorf("with %d left: allocated %d MB, want it stopped at the budget", left, bytes>>20)
				}
			}
		})
	}
}

// A call that builds a string or list is charged for what it builds, not only for what it reads.
func TestCallsAreChargedForWhatTheyBuild(t *testing.T) {
	s := strings.Repeat("ab", 5000) // 10,000 characters
	tests := []struct {
		name    string
		expr    string
		minCost uint64
	}{
		{"replace", "string(parent.spec.s).replace('a', 'aaaa')", 2000 + 2500},
		{"split", "string(parent.spec.s).split('')", 2000 + 10000},
		{"+ on dyn strings", "parent.spec.s + parent.spec.s", 2000},
		{"format", "'%s%s'.format([parent.spec.s, parent.spec.s])", 2000 + 2000},
		{"base64.encode", "base64.encode(bytes(string(parent.spec.s)))", 1000 + 1333},
		{"join", "[string(parent.spec.s), string(parent.spec.s)].join()", 4000},
		{"json.encode", "json.encode([parent.spec.s, parent.spec.s])", 2000 + 2000},
		{"flatten", "[parent.spec.items, parent.spec.items].flatten()", 2000},
		// cel-go's own charges, which its libraries' trackers make and runtimeCosts makes here
		{"distinct", "lists.range(100).distinct()", 2 * 100 * 100},
		{"sort", "lists.range(100).sort()", 2 * 100 * 100},
		{"sets.contains", "sets.contains(lists.range(100), lists.range(100))", 100 * 100},
		{"sets.equivalent", "sets.equivalent(lists.range(100), lists.range(100))", 2 * 100 * 100},
		{"slice", "lists.range(100).slice(0, 50)", 50},
	}
	env := mustEnv(t, Scope{})
	act := spec(map[string]any{"s": s, "items": numbers(1000)})
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p, err := env.Compile(tc.expr, WantAny)
			if err != nil {
				t.Fatal(err)
			}
			b := NewBudget()
			if _, err := p.Eval(t.Context(), act, b); err != nil {
				t.Fatal(err)
			}
			if spent := SyncCostBudget - b.Remaining(); spent < tc.minCost {
				t.Errorf("charged %d, want at least %d", spent, tc.minCost)
			}
		})
	}
}

// The guarded calls (checked before they run) evaluate as cel-go evaluates them.
func TestGuardedCallsEvaluateAsBefore(t *testing.T) {
	env := mustEnv(t, Scope{})
	act := NewActivation(map[string]any{"parent": parent})
	evaluateCases(t, env, act, []evalCase{
		{"replace", "'a-b-c'.replace('-', '.')", "a.b.c"},
		{"replace with a limit", "'a-b-c'.replace('-', '.', 1)", "a.b-c"},
		{"replace of the empty string", "'ab'.replace('', '-')", "-a-b-"},
		{"join", "parent.spec.items.join()", "ab"},
		{"join with a separator", "parent.spec.items.join(', ')", "a, b"},
		{"join of a dyn list", "dyn(parent.spec.items).join('+')", "a+b"},
		{"format", "'%s=%d'.format([parent.spec.image, parent.spec.size])", "nginx=3"},
		{"flatten", "[[1, 2], [3]].flatten()", []any{int64(1), int64(2), int64(3)}},
		{"flatten to a depth", "[[1, [2]], [3]].flatten(2)", []any{int64(1), int64(2), int64(3)}},
		{"json.encode of the parent's map", "json.encode(parent.metadata.labels)", `{"team":"a"}`},
		{"an error argument is the call's error", "has(parent.spec.x) ? 'x'.replace(parent.spec.x, 'y') : 'none'", "none"},
	})
	p, err := env.Compile("parent.spec.missing.replace('a', 'b')", WantAny)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.Eval(t.Context(), act, NewBudget()); err == nil || !strings.Contains(err.Error(), "no such key: missing") {
		t.Errorf("an argument's error must be the call's, got %v", err)
	}
}

// Writing out a result that refers to one list many times is charged for every copy.
func TestWritingOutAResultIsCharged(t *testing.T) {
	env := mustEnv(t, Scope{})
	p, err := env.Compile("parent.spec.items.map(x, parent.spec.items)", WantAny)
	if err != nil {
		t.Fatal(err)
	}
	act := spec(map[string]any{"items": numbers(5000)}) // 25,000,000 elements written out
	var evalErr error
	bytes := allocated(func() { _, evalErr = p.EvalNative(t.Context(), act, NewBudget()) })
	if evalErr == nil || !strings.Contains(evalErr.Error(), "writing out its result would cost more than") {
		t.Errorf("want the budget to stop it, got %v", evalErr)
	}
	if bytes > 200<<20 {
		t.Errorf("allocated %d MB", bytes>>20)
	}

	small := spec(map[string]any{"items": numbers(3)})
	b := NewBudget()
	v, err := p.EvalNative(t.Context(), small, b)
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(v) != "[[0 1 2] [0 1 2] [0 1 2]]" {
		t.Errorf("got %v", v)
	}
	// 4 lists (10 each and 3 per element) and the evaluation
	if spent := SyncCostBudget - b.Remaining(); spent < 4*10+12*3 {
		t.Errorf("charged %d", spent)
	}
}

// Programs are shared by concurrent syncs: each evaluation is charged to its own budget, and its
// guards refuse by what is left of that budget.
func TestConcurrentEvaluationsHaveTheirOwnBudgets(t *testing.T) {
	p, err := mustEnv(t, Scope{}).Compile("parent.spec.items.map(x, x * 2).size()", WantAny)
	if err != nil {
		t.Fatal(err)
	}
	act := spec(map[string]any{"items": numbers(1000)})
	var wg sync.WaitGroup
	errs := make([]error, 16)
	for i := range errs {
		wg.Go(func() {
			for range 50 {
				b := NewBudget()
				if i%2 == 1 {
					b = &Budget{remaining: 100} // too little
				}
				_, err := p.Eval(context.Background(), act, b)
				if (err == nil) != (i%2 == 0) {
					errs[i] = fmt.Errorf("evaluation %d with %d: %w", i, b.Remaining(), err)
					return
				}
			}
		})
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			t.Error(err)
		}
	}
}

// A template's strings are written out once more each time it is evaluated: interpolation and
// whole values are charged for them.
func TestTemplatesAreChargedForTheStringsTheyWrite(t *testing.T) {
	env := mustEnv(t, Scope{})
	act := spec(map[string]any{"s": strings.Repeat("x", 100_000)})
	tests := []struct {
		name     string
		template any
		minCost  uint64
	}{
		{"interpolated", "${parent.spec.s}-${parent.spec.s}", 20_000},
		{"whole values", map[string]any{"a": "${parent.spec.s}", "b": "${parent.spec.s}"}, 20_000},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tmpl, err := env.CompileTemplate(tc.template, "x")
			if err != nil {
				t.Fatal(err)
			}
			b := NewBudget()
			if _, err := tmpl.Eval(t.Context(), act, b); err != nil {
				t.Fatal(err)
			}
			if spent := SyncCostBudget - b.Remaining(); spent < tc.minCost {
				t.Errorf("charged %d, want at least %d", spent, tc.minCost)
			}
			b = &Budget{remaining: 15_000}
			if _, err := tmpl.Eval(t.Context(), act, b); err == nil || !strings.Contains(err.Error(), "writing out its result would cost") {
				t.Errorf("got %v, want the budget to stop it", err)
			}
		})
	}
}

// Programs are planned in an environment without cel-go's per-evaluation cost trackers (bases):
// it must hold the same functions with the same overloads.
func TestPlanningEnvironmentHasTheSameFunctions(t *testing.T) {
	check, run, err := bases()
	if err != nil {
		t.Fatal(err)
	}
	overloads := func(env *cel.Env) map[string][]string {
		out := map[string][]string{}
		for name, fn := range env.Functions() {
			for _, o := range fn.OverloadDecls() {
				out[name] = append(out[name], o.ID())
			}
			sort.Strings(out[name])
		}
		return out
	}
	if c, r := overloads(check), overloads(run); !reflect.DeepEqual(c, r) {
		for name := range c {
			if !reflect.DeepEqual(c[name], r[name]) {
				t.Errorf("%s: %v to check, %v to run", name, c[name], r[name])
			}
		}
		for name := range r {
			if _, ok := c[name]; !ok {
				t.Errorf("%s: only to run", name)
			}
		}
	}
}

// An expression runs unmetered, charged its estimate, only when nothing it does can grow with its
// input; everything else is metered as it runs.
func TestOnlyExpressionsThatCannotGrowRunUnmetered(t *testing.T) {
	typed := parentType(t, `{type: object, properties: {spec: {type: object, properties: {
  name: {type: string, maxLength: 63}, other: {type: string}, items: {type: array, maxItems: 10, items: {type: string, maxLength: 10}}}}}}`)
	tests := []struct {
		expr    string
		metered bool
	}{
		{"parent.spec.name", false},
		{"has(parent.spec.name) && parent.spec.name != ''", false},
		{"parent.spec.?name.orValue('x') == 'y' ? 'a' : 'b'", false},
		{"parent.spec.name + '-cm'", false},                 // bounded by maxLength
		{"parent.spec.items.map(x, x + '!')", true},         // a loop over the input
		{"parent.spec.?name.optMap(n, {'name': n})", false}, // optMap loops over []
		{"[1, 2].map(x, x * 2)", false},                     // a loop over a literal
		{"parent.spec.name.replace('a', 'bb')", true},       // replace is not among boundedCalls
		{"json.encode(parent.spec.items)", true},            // nor are encoders
		{"parent.spec.other + '-cm'", true},                 // estimated for the request limit of 3 MB: better metered
		{"parent.spec.other", false},
		{"parent.metadata.name == parent.spec.other", false}, // bounded by the name's 253
		{"dyn(parent.spec).x + '!'", true},                   // an unbounded (dyn) string
	}
	env := mustEnv(t, Scope{Parent: typed})
	for _, tc := range tests {
		t.Run(tc.expr, func(t *testing.T) {
			p, err := env.Compile(tc.expr, WantAny)
			if err != nil {
				t.Fatal(err)
			}
			if metered := p.metered != nil; metered != tc.metered {
				t.Errorf("metered: %v, want %v", metered, tc.metered)
			}
		})
	}
}

func TestAnUnmeteredExpressionIsChargedBeforeItRuns(t *testing.T) {
	p, err := mustEnv(t, Scope{}).Compile("parent.spec.image", WantAny)
	if err != nil {
		t.Fatal(err)
	}
	act := NewActivation(map[string]any{"parent": parent})
	b := NewBudget()
	if _, err := p.Eval(t.Context(), act, b); err != nil || b.Remaining() != SyncCostBudget-p.static {
		t.Fatalf("got %v with %d left, want %d charged", err, b.Remaining(), p.static)
	}
	b = &Budget{remaining: 1}
	if _, err := p.Eval(t.Context(), act, b); err == nil || !strings.Contains(err.Error(), "would cost 2, more than the 1 left of the cost budget") {
		t.Errorf("got %v", err)
	}
}
