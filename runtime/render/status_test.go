package render

import (
	"errors"
	"strings"
	"testing"
	"unicode/utf8"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"metacel.dev/metacel/runtime/contract"
	"metacel.dev/metacel/runtime/kinds"
)

// A readyWhen that fails to evaluate (a child without the status it reads, say) makes its child
// not ready, with the error in the Ready condition; the sync itself succeeds: its children are
// applied, its status computed, its other children judged.
func TestAReadyWhenThatFailsMakesItsChildNotReady(t *testing.T) {
	const children = `  children:
    - id: cm
      template: {apiVersion: v1, kind: ConfigMap, metadata: {name: x}}
      readyWhen: "child.data.ready == 'yes'"
    - id: other
      template: {apiVersion: v1, kind: ConfigMap, metadata: {name: w}}
  status:
    name: "${parent.metadata.name}"
`
	observed := func(xData string) map[string][]*unstructured.Unstructured {
		return map[string][]*unstructured.Unstructured{
			"cm":    {obj(t, "{apiVersion: v1, kind: ConfigMap, metadata: {name: x, namespace: ns}"+xData+"}")},
			"other": {obj(t, "{apiVersion: v1, kind: ConfigMap, metadata: {name: w, namespace: ns}}")},
		}
	}
	tests := []struct {
		name     string
		observed map[string][]*unstructured.Unstructured
		ready    Condition
	}{
		{"a child without the field its readyWhen reads is not ready, and the error says why",
			observed(""),
			Condition{Type: contract.ConditionReady, Status: "False", Reason: contract.ReasonReadyWhenFailed,
				Message: `waiting for ConfigMap ns/x; readyWhen failed for ConfigMap ns/x: spec.children[0].readyWhen: evaluate "child.data.ready == 'yes'": no such key: data`}},
		{"the same child with the field is judged by its readyWhen",
			observed(", data: {ready: 'yes'}"),
			Condition{Type: contract.ConditionReady, Status: "True", Reason: contract.ReasonReady, Message: "2 children ready"}},
		{"a child that does not exist yet is waited for, with no error",
			nil,
			Condition{Type: contract.ConditionReady, Status: "False", Reason: contract.ReasonNotReady, Message: "waiting for ConfigMap ns/x, ConfigMap ns/w"}},
	}
	c := load(t, children)
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			in := Input{Parent: obj(t, testParent), Mapper: kinds.NewCatalog()}
			before, err := Render(t.Context(), c, in)
			if err != nil {
				t.Fatal(err)
			}
			in.Observed = tc.observed
			out, err := Render(t.Context(), c, in)
			if err != nil {
				t.Fatalf("the sync failed: %v", err)
			}
			checkReadyWhenOutcome(t, "Render", out, tc.ready)
			// a sync's render after its writes judges the readiness alone: the same outcome
			again, err := Rerender(t.Context(), c, in, before)
			if err != nil {
				t.Fatalf("the render after the writes failed: %v", err)
			}
			checkReadyWhenOutcome(t, "Rerender", again, tc.ready)
		})
	}
}

func checkReadyWhenOutcome(t *testing.T, what string, out *Output, ready Condition) {
	t.Helper()
	conds := out.Conditions()
	if want := (Condition{Type: contract.ConditionSynced, Status: "True", Reason: contract.ReasonSynced, Message: "2 children applied"}); conds[0] != want {
		t.Errorf("%s: Synced: %+v, want %+v", what, conds[0], want)
	}
	if conds[1] != ready {
		t.Errorf("%s: Ready:\n got %+v\nwant %+v", what, conds[1], ready)
	}
	if out.Status["name"] != "app" {
		t.Errorf("%s: status %v: the status fields were not computed", what, out.Status)
	}
}

// What stops every expression alike still fails the sync when a readyWhen meets it: the sync's
// cost budget, spent.
func TestAReadyWhenOverTheBudgetFailsTheSync(t *testing.T) {
	c := load(t, `  children:
    - id: cm
      template: {apiVersion: v1, kind: ConfigMap, metadata: {name: x}}
      readyWhen: "size(string(parent.spec.s).replace('a', string(parent.spec.s))) > 0"
`)
	in := Input{
		Parent:   parentWithSpec(map[string]any{"s": strings.Repeat("a", 30_000)}),
		Observed: map[string][]*unstructured.Unstructured{"cm": {obj(t, "{apiVersion: v1, kind: ConfigMap, metadata: {name: x, namespace: ns}}")}},
		Mapper:   kinds.NewCatalog(),
	}
	_, err := Render(t.Context(), c, in)
	var re *Error
	if !errors.As(err, &re) || re.Reason != contract.ReasonEvaluationError || re.Path != "spec.children[0].readyWhen" ||
		!strings.Contains(err.Error(), "of the cost budget of 10000000 per sync") {
		t.Fatalf("got %v, want the readyWhen to run out of the sync's budget", err)
	}
}

// The Ready condition names every child not ready, and the first readyWhen error in full.
func TestReadyConditionSummarizesReadyWhenErrors(t *testing.T) {
	tests := []struct {
		name string
		out  Output
		want string
	}{
		{"one error",
			Output{NotReady: []string{"Pod ns/a", "Pod ns/b"}, ReadyWhenErrors: []string{"Pod ns/b: e1"}},
			"waiting for Pod ns/a, Pod ns/b; readyWhen failed for Pod ns/b: e1"},
		{"further errors are counted",
			Output{NotReady: []string{"Pod ns/a", "Pod ns/b", "Pod ns/c"}, ReadyWhenErrors: []string{"Pod ns/a: e1", "Pod ns/b: e2", "Pod ns/c: e3"}},
			"waiting for Pod ns/a, Pod ns/b, Pod ns/c; readyWhen failed for Pod ns/a: e1 (and 2 more readyWhen errors)"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := tc.out.Conditions()[1]
			if got.Status != "False" || got.Reason != contract.ReasonReadyWhenFailed || got.Message != tc.want {
				t.Errorf("got %+v, want False, %s, %q", got, contract.ReasonReadyWhenFailed, tc.want)
			}
		})
	}
}

// A failure's message is cut to what a condition holds: an error of 40 KiB (a validation's
// messageExpression over a long field, an API server's answer) made a status the API server
// refuses for good, and the parent went on saying it was synced.
func TestAFailuresMessageIsCutToWhatAConditionHolds(t *testing.T) {
	long := strings.Repeat("é", 20*1024) // 40 KiB, two bytes a character
	for _, c := range FailureConditions(contract.ReasonValidationFailed, long) {
		if len(c.Message) > contract.MaxConditionMessage || !utf8.ValidString(c.Message) || !strings.HasSuffix(c.Message, "(cut)") {
			t.Errorf("%s: a message of %d bytes (valid UTF-8 %v), want at most %d, cut on a character, saying so",
				c.Type, len(c.Message), utf8.ValidString(c.Message), contract.MaxConditionMessage)
		}
	}
	if c := FailureConditions(contract.ReasonValidationFailed, "short")[0]; c.Message != "short" {
		t.Errorf("a short message became %q", c.Message)
	}
}
