package policy

import (
	"context"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/uuid"

	"metacel.dev/metacel/runtime/kinds"
)

// withRollout appends spec.rollout to header (11 lines): "  rollout:" is line 12, body starts at 13.
func withRollout(body string) string { return header + "  rollout:\n" + body }

// steps is a valid rollout body: lines 13 to 17.
const steps = `    steps:
      - percent: 10
        pauseSeconds: 30
      - percent: 50
      - percent: 100
`

func TestRolloutDecodes(t *testing.T) {
	tests := []struct {
		name   string
		body   string
		budget *intstr.IntOrString
	}{
		{"a count budget", steps + "    failureBudget: 2\n", new(intstr.FromInt32(2))},
		{"a percentage budget", steps + "    failureBudget: 10%\n", new(intstr.FromString("10%"))},
		{"a quoted percentage budget", steps + "    failureBudget: \"10%\"\n", new(intstr.FromString("10%"))},
		{"no budget", steps, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			docs, err := Parse("p.yaml", []byte(withRollout(tc.body+"    health: \"true\"\n    healthDeadlineSeconds: 60\n")))
			if err != nil {
				t.Fatal(err)
			}
			r := docs[0].Policy.Spec.Rollout
			want := []RolloutStep{{Percent: 10, PauseSeconds: 30}, {Percent: 50}, {Percent: 100}}
			if len(r.Steps) != len(want) || r.Steps[0] != want[0] || r.Steps[1] != want[1] || r.Steps[2] != want[2] {
				t.Errorf("steps: got %+v, want %+v", r.Steps, want)
			}
			if r.Health != "true" || r.HealthDeadlineSeconds == nil || *r.HealthDeadlineSeconds != 60 {
				t.Errorf("health and deadline: got %q, %v", r.Health, r.HealthDeadlineSeconds)
			}
			if (r.FailureBudget == nil) != (tc.budget == nil) || (tc.budget != nil && *r.FailureBudget != *tc.budget) {
				t.Errorf("failure budget: got %v, want %v", r.FailureBudget, tc.budget)
			}
			if line := docs[0].Source.LineOf("spec.rollout.steps[1].percent"); line != 16 {
				t.Errorf("line of steps[1].percent: got %d, want 16", line)
			}
		})
	}
}

func TestRolloutErrors(t *testing.T) {
	myappCRD := mapper(t, "myapp")
	tests := []struct {
		name   string
		body   string
		mapper kinds.Mapper
		want   string // file:line: path: message (a prefix of the message is enough)
	}{
		// decoding
		{"unknown field of a step with a suggestion", "    steps:\n      - percent: 100\n        pauseSecond: 5\n", nil,
			`p.yaml:15: spec.rollout.steps[0].pauseSecond: unknown field "pauseSecond" (did you mean "pauseSeconds"?)`},
		{"unknown field of the rollout", steps + "    deadline: 5\n", nil,
			`p.yaml:18: spec.rollout.deadline: unknown field "deadline"`},
		{"percent that is not an integer", "    steps:\n      - percent: ten\n", nil,
			`p.yaml:14: spec.rollout.steps[0].percent: expected an integer, got a string "ten"`},
		{"steps that are not a list", "    steps: {percent: 100}\n", nil,
			`p.yaml:13: spec.rollout.steps: expected a list, got an object`},
		{"failure budget that is a number", steps + "    failureBudget: 1.5\n", nil,
			`p.yaml:18: spec.rollout.failureBudget: expected an integer or a percentage string such as "10%", got a number "1.5"`},
		{"failure budget that is a boolean", steps + "    failureBudget: true\n", nil,
			`p.yaml:18: spec.rollout.failureBudget: expected an integer or a percentage string such as "10%", got a boolean "true"`},
		{"failure budget that is an object", steps + "    failureBudget: {count: 1}\n", nil,
			`p.yaml:18: spec.rollout.failureBudget: expected an integer or a percentage string such as "10%", got an object`},
		{"failure budget over an int32", steps + "    failureBudget: 99999999999\n", nil,
			`p.yaml:18: spec.rollout.failureBudget: expected an integer or a percentage string such as "10%", got an integer "99999999999"`},
		{"health that is not a string", steps + "    health: true\n", nil,
			`p.yaml:18: spec.rollout.health: expected a string, got a boolean (quote it: "true")`},
		// validation
		{"no steps", "    steps: []\n", nil,
			"p.yaml:13: spec.rollout.steps: needs at least one step: give the shares of parents to move, ending with {percent: 100}"},
		{"steps left out", "    failureBudget: 1\n", nil,
			"p.yaml:12: spec.rollout.steps: needs at least one step"},
		{"a step without percent", "    steps:\n      - pauseSeconds: 5\n      - percent: 100\n", nil,
			"p.yaml:14: spec.rollout.steps[0].percent: is required: the share of parents (1 to 100) on the new version after this step"},
		{"percent 0", "    steps:\n      - percent: 0\n      - percent: 100\n", nil,
			"p.yaml:14: spec.rollout.steps[0].percent: must be from 1 to 100 (a share of the parents), got 0"},
		{"percent over 100", "    steps:\n      - percent: 10\n      - percent: 101\n", nil,
			"p.yaml:15: spec.rollout.steps[1].percent: must be from 1 to 100 (a share of the parents), got 101"},
		{"percent repeated", "    steps:\n      - percent: 50\n      - percent: 50\n      - percent: 100\n", nil,
			"p.yaml:15: spec.rollout.steps[1].percent: must be more than the step before's 50: each step moves more parents (e.g. 10, 50, 100)"},
		{"percent decreasing", "    steps:\n      - percent: 50\n      - percent: 20\n      - percent: 100\n", nil,
			"p.yaml:15: spec.rollout.steps[1].percent: must be more than the step before's 50"},
		{"last step short of 100", "    steps:\n      - percent: 10\n      - percent: 50\n", nil,
			"p.yaml:15: spec.rollout.steps[1].percent: the last step must be 100, got 50: end with {percent: 100} so that every parent reaches the new version"},
		{"negative pause", "    steps:\n      - percent: 10\n        pauseSeconds: -1\n      - percent: 100\n", nil,
			"p.yaml:15: spec.rollout.steps[0].pauseSeconds: must be at least 0 (seconds), got -1"},
		{"pause longer than a duration holds", "    steps:\n      - percent: 100\n        pauseSeconds: 9223372037\n", nil,
			"p.yaml:15: spec.rollout.steps[0].pauseSeconds: must be at most 9223372036 (seconds), got 9223372037"},
		{"deadline 0", steps + "    healthDeadlineSeconds: 0\n", nil,
			"p.yaml:18: spec.rollout.healthDeadlineSeconds: must be at least 1 (seconds), got 0"},
		{"negative failure budget", steps + "    failureBudget: -1\n", nil,
			"p.yaml:18: spec.rollout.failureBudget: must be at least 0 (parents), got -1"},
		{"failure budget over 100%", steps + "    failureBudget: 110%\n", nil,
			`p.yaml:18: spec.rollout.failureBudget: "110%" is over 100%: write a percentage from "0%" to "100%"`},
		{"failure budget a string without %", steps + "    failureBudget: \"5\"\n", nil,
			`p.yaml:18: spec.rollout.failureBudget: "5" is not a count or a percentage: write an integer (failureBudget: 2) or a percentage string (failureBudget: "10%")`},
		{"failure budget a negative percentage", steps + "    failureBudget: -5%\n", nil,
			`p.yaml:18: spec.rollout.failureBudget: "-5%" is not a count or a percentage`},
		// compilation of the health rule
		{"health that is not a bool", steps + "    health: \"'yes'\"\n", nil,
			`p.yaml:18: spec.rollout.health: "'yes'" must return a bool, but returns string`},
		{"health that is not a bool by the parent's schema", steps + "    health: \"parent.spec.image\"\n", myappCRD,
			`p.yaml:18: spec.rollout.health: "parent.spec.image" must return a bool, but returns string`},
		{"health with a misspelt field of the typed parent", steps + "    health: \"parent.spec.imgae == ''\"\n", myappCRD,
			`p.yaml:18: spec.rollout.health: compile "parent.spec.imgae == ''": undefined field 'imgae' (did you mean "image"?) (column 12 of the expression)`},
		{"health with a syntax error", steps + "    health: \"parent.status.(\"\n", nil,
			`p.yaml:18: spec.rollout.health: compile "parent.status.(": Syntax error`},
		{"health reading what only a sync has", steps + "    health: \"has(children.pod)\"\n", nil,
			`p.yaml:18: spec.rollout.health: compile "has(children.pod)": undeclared reference to 'children'`},
		{"empty health", steps + "    health: \" \"\n", nil,
			`p.yaml:18: spec.rollout.health: empty expression`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			m := tc.mapper
			if m == nil {
				m = kinds.NewCatalog()
			}
			_, err := Load("p.yaml", []byte(withRollout(tc.body)), m)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got error:\n%v\nwant it to contain:\n%s", err, tc.want)
			}
		})
	}
}

func TestRolloutCompiles(t *testing.T) {
	tests := []struct {
		name     string
		policy   string
		deadline time.Duration
		health   bool
	}{
		{"defaults", withRollout(steps), defaultHealthDeadline, false},
		{"a deadline and a health rule", withRollout(steps + "    healthDeadlineSeconds: 120\n    health: \"true\"\n"), 2 * time.Minute, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := load(t, tc.policy).Rollout
			if r == nil {
				t.Fatal("no compiled rollout")
			}
			want := []CompiledRolloutStep{{10, 30 * time.Second}, {50, 0}, {100, 0}}
			if len(r.Steps) != 3 || r.Steps[0] != want[0] || r.Steps[1] != want[1] || r.Steps[2] != want[2] {
				t.Errorf("steps: got %+v, want %+v", r.Steps, want)
			}
			if r.HealthDeadline != tc.deadline || (r.Health != nil) != tc.health {
				t.Errorf("got deadline %v and health %v, want %v and %v", r.HealthDeadline, r.Health != nil, tc.deadline, tc.health)
			}
			if r.Budget(1000) != 0 {
				t.Errorf("default failure budget: got %d, want 0", r.Budget(1000))
			}
		})
	}
	if r := load(t, header).Rollout; r != nil {
		t.Errorf("a policy without spec.rollout: got a rollout %+v", r)
	}
}

func load(t *testing.T, policy string) *Compiled {
	t.Helper()
	cs, err := Load("p.yaml", []byte(policy), kinds.NewCatalog())
	if err != nil {
		t.Fatal(err)
	}
	return cs[0]
}

func TestRolloutHealthy(t *testing.T) {
	ready := func(status, reason, message string) map[string]any {
		return map[string]any{"type": "Ready", "status": status, "reason": reason, "message": message}
	}
	synced := map[string]any{"type": "Synced", "status": "False", "reason": "ApplyFailed", "message": "pods is forbidden"}
	tests := []struct {
		name    string
		health  string
		parent  map[string]any // nil: no parent
		ok      bool
		why     string
		wantErr string
	}{
		{"default: Ready True", "", parentWith(1, ready("True", "Ready", "")), true, "", ""},
		{"default: Ready False names the reason and message", "", parentWith(1, ready("False", "Waiting", "pod is Pending")),
			false, "Ready is False: Waiting: pod is Pending", ""},
		{"default: Ready Unknown without a reason", "", parentWith(1, ready("Unknown", "", "")), false, "Ready is Unknown", ""},
		{"default: no conditions yet", "", parentWith(1), false, "no Ready condition yet", ""},
		{"default: Synced False wins over Ready True", "", parentWith(1, ready("True", "Ready", ""), synced),
			false, "Synced is False: ApplyFailed: pods is forbidden", ""},
		{"default: Synced True is fine", "", parentWith(1, ready("True", "Ready", ""), map[string]any{"type": "Synced", "status": "True"}), true, "", ""},
		{"default: Ready of an older generation", "", parentWith(2, withGen(ready("True", "Ready", ""), 1)),
			false, "Ready is for generation 1, not the current 2", ""},
		{"default: Ready of the current generation", "", parentWith(2, withGen(ready("True", "Ready", ""), 2)), true, "", ""},
		{"default: no parent", "", nil, false, "the parent does not exist", ""},
		{"expression true", "parent.status.?replicas.orValue(0) > 0", withReplicas(parentWith(1), 2), true, "", ""},
		{"expression false", "parent.status.?replicas.orValue(0) > 0", parentWith(1), false, "health expression returned false", ""},
		{"expression ignores the conditions", "true", parentWith(1, ready("False", "Waiting", "")), true, "", ""},
		{"expression that fails to evaluate", "parent.spec.replicas > 0", parentWith(1), false, "",
			`spec.rollout.health: evaluate "parent.spec.replicas > 0"`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			body := steps
			if tc.health != "" {
				body += "    health: " + quoteYAML(tc.health) + "\n"
			}
			r := load(t, withRollout(body)).Rollout
			var parent *unstructured.Unstructured
			if tc.parent != nil {
				parent = &unstructured.Unstructured{Object: tc.parent}
			}
			ok, why, err := r.Healthy(context.Background(), parent)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("got error %v, want one containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil || ok != tc.ok || why != tc.why {
				t.Errorf("got (%v, %q, %v), want (%v, %q, nil)", ok, why, err, tc.ok, tc.why)
			}
		})
	}
}

func parentWith(generation int64, conds ...map[string]any) map[string]any {
	list := make([]any, len(conds))
	for i, c := range conds {
		list[i] = c
	}
	return map[string]any{
		"apiVersion": "demo.rtfm.co.ua/v1", "kind": "MyApp",
		"metadata": map[string]any{"name": "a", "namespace": "default", "generation": generation},
		"spec":     map[string]any{},
		"status":   map[string]any{"conditions": list},
	}
}

func withGen(c map[string]any, g int64) map[string]any {
	c["observedGeneration"] = g
	return c
}

func withReplicas(p map[string]any, n int64) map[string]any {
	p["status"].(map[string]any)["replicas"] = n
	return p
}

func quoteYAML(s string) string { return `"` + strings.ReplaceAll(s, `"`, `\"`) + `"` }

func TestRolloutBudget(t *testing.T) {
	tests := []struct {
		name   string
		budget intstr.IntOrString
		moved  int
		want   int
	}{
		{"a count whatever moved", intstr.FromInt32(2), 0, 2},
		{"a count of many moved", intstr.FromInt32(2), 500, 2},
		{"a percentage rounds down", intstr.FromString("10%"), 19, 1},
		{"a percentage of too few is 0", intstr.FromString("10%"), 9, 0},
		{"a percentage of exactly enough", intstr.FromString("10%"), 10, 1},
		{"0%", intstr.FromString("0%"), 100, 0},
		{"100%", intstr.FromString("100%"), 7, 7},
		{"no parents moved", intstr.FromString("50%"), 0, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := &CompiledRollout{FailureBudget: tc.budget}
			if got := r.Budget(tc.moved); got != tc.want {
				t.Errorf("Budget(%d) with %s: got %d, want %d", tc.moved, tc.budget.String(), got, tc.want)
			}
		})
	}
}

func TestRolloutShare(t *testing.T) {
	r := load(t, withRollout(steps)).Rollout
	for step, want := range map[int]int{-1: 0, 0: 10, 1: 50, 2: 100, 3: 100} {
		if got := r.Share(step); got != want {
			t.Errorf("Share(%d): got %d, want %d", step, got, want)
		}
	}
}

func TestRolloutBucketIsStable(t *testing.T) {
	// FNV-1a 64 of "" is its offset basis 0xcbf29ce484222325, of "a" 0xaf63dc4c8601ec8c
	tests := []struct {
		uid  types.UID
		want int
	}{
		{"", 0xcbf29ce484222325 % 100},
		{"a", 0xaf63dc4c8601ec8c % 100},
		{"3f1c2b9e-6f0a-4c1e-9d55-0b7f0a1e2c3d", 99},
	}
	for _, tc := range tests {
		if got := RolloutBucket(tc.uid); got != tc.want {
			t.Errorf("RolloutBucket(%q): got %d, want %d", tc.uid, got, tc.want)
		}
	}
}

func TestRolloutBucketSpreadsParents(t *testing.T) {
	const n = 10_000
	var deciles [10]int
	for range n {
		b := RolloutBucket(uuid.NewUUID())
		if b < 0 || b >= 100 {
			t.Fatalf("bucket %d out of [0, 100)", b)
		}
		deciles[b/10]++
	}
	for i, got := range deciles {
		if got < n*8/100 || got > n*12/100 {
			t.Errorf("decile %d holds %d of %d parents, want 10%% ± 2%%: %v", i, got, n, deciles)
		}
	}
}
