package render

import (
	"errors"
	"runtime"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"metacel.dev/metacel/runtime/contract"
	"metacel.dev/metacel/runtime/expr"
	"metacel.dev/metacel/runtime/kinds"
)

// parentWithSpec is testParent's MyApp with the given spec.
func parentWithSpec(spec map[string]any) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "demo.rtfm.co.ua/v1",
		"kind":       "MyApp",
		"metadata":   map[string]any{"name": "app", "namespace": "ns", "uid": "u-1", "generation": int64(3)},
		"spec":       spec,
	}}
}

func numbers(n int) []any {
	out := make([]any, n)
	for i := range out {
		out[i] = int64(i)
	}
	return out
}

// allocated runs f and returns the bytes it allocated (a count, whatever the machine's load).
func allocated(f func()) uint64 {
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	f()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

// An expression that would build gigabytes for some parent fails that parent's sync with an
// EvaluationError naming the expression and the budget, having allocated little.
func TestAnExpressionThatWouldBuildGigabytesFailsTheSync(t *testing.T) {
	tests := []struct {
		name string
		body string
		spec map[string]any
		path string
		msg  string
	}{
		{"replace in the status (issue 9)", `  status:
    r: "${size(string(parent.spec.s).replace(\"a\", string(parent.spec.s)))}"
`, map[string]any{"s": strings.Repeat("a", 30_000)},
			"spec.status.r", `evaluate "size(string(parent.spec.s).replace(\"a\", string(parent.spec.s)))": replace() would cost 90006000, ` +
				`more than the 10000000 left of the cost budget of 10000000 per sync`},
		{"a variable that refers to one list 5,000 times", `  variables:
    - {name: all, expression: "parent.spec.items.map(x, parent.spec.items)"}
`, map[string]any{"items": numbers(5000)},
			"spec.variables[0].expression", "writing out its result would cost more than"},
		{"a child expression that refers to one string 1,000 times", `  children:
    - id: cm
      expression: "{'apiVersion': 'v1', 'kind': 'ConfigMap', 'metadata': {'name': 'x'}, 'data': parent.spec.items.map(x, string(x)).transformMapEntry(i, k, {k: parent.spec.s})}"
`, map[string]any{"items": numbers(1000), "s": strings.Repeat("x", 1_000_000)},
			"spec.children[0].expression", "writing out its result would cost more than"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := load(t, tc.body)
			var err error
			bytes := allocated(func() {
				_, err = Render(t.Context(), c, Input{Parent: parentWithSpec(tc.spec), Mapper: kinds.NewCatalog()})
			})
			var re *Error
			if !errors.As(err, &re) || re.Reason != contract.ReasonEvaluationError || re.Path != tc.path || !strings.Contains(err.Error(), tc.msg) {
				t.Fatalf("got %v, want an %s at %s saying %q", err, contract.ReasonEvaluationError, tc.path, tc.msg)
			}
			if !strings.Contains(err.Error(), "of the cost budget of 10000000 per sync") {
				t.Errorf("the message must name the budget: %v", err)
			}
			if bytes > 50<<20 {
				t.Errorf("allocated %d MB, want well below 100 MB", bytes>>20)
			}
		})
	}
}

// expensive costs about 6,000,000 for a parent with 1,000 items and a 60,000-character s: a
// related name and a status field of the same sync cannot both spend it.
const expensive = "parent.spec.items.map(x, parent.spec.s.contains('zz')).exists(b, b)"

func TestRelatedExpressionsSpendTheSyncBudget(t *testing.T) {
	c := load(t, `  related:
    - {id: src, apiVersion: v1, resource: configmaps, name: "${`+expensive+` ? 'other' : 'cfg'}"}
  status:
    found: "${`+expensive+`}"
`)
	parent := parentWithSpec(map[string]any{"items": numbers(1000), "s": strings.Repeat("x", 60_000)})
	in := Input{Parent: parent, Mapper: kinds.NewCatalog()}

	// each alone is within the budget
	if _, err := Related(t.Context(), c, parent, nil); err != nil {
		t.Fatalf("related alone: %v", err)
	}
	if _, err := Render(t.Context(), c, in); err != nil {
		t.Fatalf("render alone: %v", err)
	}

	// one sync: both spend from one budget
	budget := expr.NewBudget()
	refs, err := Related(t.Context(), c, parent, budget)
	if err != nil {
		t.Fatal(err)
	}
	if len(refs) != 1 || refs[0].Name != "cfg" {
		t.Errorf("related: %+v", refs)
	}
	if spent := expr.SyncCostBudget - budget.Remaining(); spent < 5_000_000 {
		t.Errorf("related spent %d of the sync's budget, want its cost of about 6000000", spent)
	}
	in.Budget = budget
	_, err = Render(t.Context(), c, in)
	var re *Error
	if !errors.As(err, &re) || re.Reason != contract.ReasonEvaluationError || re.Path != "spec.status.found" ||
		!strings.Contains(err.Error(), "of the cost budget of 10000000 per sync") {
		t.Fatalf("got %v, want the status to run out of the sync's budget", err)
	}
}

func TestRelatedStopsAtTheBudget(t *testing.T) {
	c := load(t, `  related:
    - {id: src, apiVersion: v1, resource: configmaps, name: "${string(size(string(parent.spec.s).replace('a', string(parent.spec.s))))}"}
`)
	_, err := Related(t.Context(), c, parentWithSpec(map[string]any{"s": strings.Repeat("a", 30_000)}), expr.NewBudget())
	var re *Error
	if !errors.As(err, &re) || re.Reason != contract.ReasonEvaluationError || re.Path != "spec.related[0].name" || !strings.Contains(err.Error(), "replace() would cost") {
		t.Fatalf("got %v, want an %s at spec.related[0].name", err, contract.ReasonEvaluationError)
	}
}
