package gitops

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/cli-utils/pkg/kstatus/status"
	"sigs.k8s.io/yaml"

	"metacel.dev/metacel/runtime/contract"
	"metacel.dev/metacel/test/mdblocks"
)

const root = "../.."

// cond is a condition as metacel writes it on a parent.
type cond struct {
	typ, status, reason, message string
	gen                          int64
}

// parent is a Website at generation gen whose status, when conds are given, is of generation
// observed; deleting sets its deletionTimestamp.
func parent(gen, observed int64, deleting bool, conds ...cond) *unstructured.Unstructured {
	obj := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "example.com/v1", "kind": "Website",
		"metadata": map[string]any{"name": "hello", "namespace": "default", "generation": gen},
		"spec":     map[string]any{"image": "nginx:1.27"},
	}}
	if deleting {
		obj.Object["metadata"].(map[string]any)["deletionTimestamp"] = "2026-01-02T03:04:05Z"
	}
	if len(conds) == 0 {
		return obj
	}
	list := make([]any, 0, len(conds))
	for _, c := range conds {
		list = append(list, map[string]any{
			"type": c.typ, "status": c.status, "reason": c.reason, "message": c.message,
			"observedGeneration": c.gen, "lastTransitionTime": "2026-01-02T03:04:05Z",
		})
	}
	obj.Object["status"] = map[string]any{"observedGeneration": observed, "conditions": list}
	return obj
}

var (
	synced = cond{contract.ConditionSynced, "True", contract.ReasonSynced, "", 1}
	ready  = cond{contract.ConditionReady, "True", contract.ReasonReady, "2 children ready", 1}
)

func notReady(reason, message string) cond {
	return cond{contract.ConditionReady, "False", reason, message, 1}
}

// failedSync is a failed sync's conditions: Synced and Ready False with the reason.
func failedSync(reason, message string) []cond {
	return []cond{
		{contract.ConditionSynced, "False", reason, message, 1},
		notReady(reason, "not synced: "+message),
	}
}

// verdicts is a parent's health as each tool judges it. flux "" is an expression that cannot
// evaluate (Flux: Unknown, and its wait goes on).
type verdicts struct {
	argo    Health
	kstatus status.Status
	flux    status.Status
}

type healthCase struct {
	name   string
	parent *unstructured.Unstructured
	want   verdicts
}

// healthCases are parents in each state metacel puts them in, as Argo CD with
// deploy/argocd/health.lua, kstatus (Flux without healthCheckExprs) and Flux with the
// healthCheckExprs of deploy/flux/metacel.yaml judge them (docs/gitops.md).
func healthCases() []healthCase {
	const waiting = "waiting for Deployment default/hello-app"
	cases := []healthCase{
		{"created, not synced yet: progressing (kstatus: current, as it calls an object with no status)", parent(1, 0, false),
			verdicts{Health{Progressing, "waiting for metacel to sync the parent"}, status.CurrentStatus, ""}},
		{"children not ready: progressing", parent(1, 1, false, synced, notReady(contract.ReasonNotReady, waiting)),
			verdicts{Health{Progressing, "ChildrenNotReady: " + waiting}, status.InProgressStatus, status.InProgressStatus}},
		{"no child included: progressing", parent(1, 1, false, synced, notReady(contract.ReasonNoChildIncluded, "no child is included")),
			verdicts{Health{Progressing, "NoChildIncluded: no child is included"}, status.InProgressStatus, status.InProgressStatus}},
		{"the policy's readyWhen false: progressing", parent(1, 1, false, synced, notReady(contract.ReasonParentNotReady, "spec.readyWhen is false")),
			verdicts{Health{Progressing, "ParentNotReady: spec.readyWhen is false"}, status.InProgressStatus, status.InProgressStatus}},
		{"a readyWhen failed to evaluate: progressing", parent(1, 1, false, synced, notReady(contract.ReasonReadyWhenFailed, "no such key: status")),
			verdicts{Health{Progressing, "ReadyWhenFailed: no such key: status"}, status.InProgressStatus, status.InProgressStatus}},
		{"Ready Unknown: progressing", parent(1, 1, false, synced, cond{contract.ConditionReady, "Unknown", "Unknown", "", 1}),
			verdicts{Health{Progressing, "Unknown"}, status.InProgressStatus, status.InProgressStatus}},
		{"Synced missing: progressing", parent(1, 1, false, ready),
			verdicts{Health{Progressing, "waiting for metacel to sync the parent"}, status.CurrentStatus, status.CurrentStatus}},
		{"a child failed: degraded with the reason (kstatus: in progress, it never fails a Ready=False)",
			parent(1, 1, false, synced, notReady(contract.ReasonChildFailed, "Job default/hello-once failed: DeadlineExceeded")),
			verdicts{Health{Degraded, "ChildFailed: Job default/hello-once failed: DeadlineExceeded"}, status.InProgressStatus, status.FailedStatus}},
		{"deletion blocked: degraded with the reason (Argo CD itself shows any object being deleted Progressing, Pending deletion)",
			parent(1, 1, true, synced, notReady(contract.ReasonDeletionBlocked, "ConfigMap default/hello-db is being deleted since 03:04")),
			verdicts{Health{Degraded, "DeletionBlocked: ConfigMap default/hello-db is being deleted since 03:04"}, status.TerminatingStatus, status.FailedStatus}},
		{"healthy: Ready at the current generation", parent(1, 1, false, synced, ready),
			verdicts{Health{Healthy, "ChildrenReady: 2 children ready"}, status.CurrentStatus, status.CurrentStatus}},
		{"stale generation: the spec changed since the last sync", parent(2, 1, false, synced, ready),
			verdicts{Health{Progressing, "metacel has not synced generation 2 yet (status of generation 1)"}, status.InProgressStatus, status.InProgressStatus}},
		{"stale generation of a failed sync: progressing, the new spec may fix it", parent(2, 1, false, failedSync(contract.ReasonValidationFailed, "spec.image must be set")...),
			verdicts{Health{Progressing, "metacel has not synced generation 2 yet (status of generation 1)"}, status.InProgressStatus, status.InProgressStatus}},
		{"Ready of an older generation than the status: progressing (kstatus reads only status.observedGeneration)",
			parent(2, 2, false, cond{contract.ConditionSynced, "True", contract.ReasonSynced, "", 2}, ready),
			verdicts{Health{Progressing, "the Ready condition is of generation 1, the parent is at 2"}, status.CurrentStatus, status.InProgressStatus}},
	}
	// every reason of a failed sync (runtime/contract) is degraded, with the reason and message
	for _, reason := range []string{
		contract.ReasonValidationFailed, contract.ReasonEvaluationError, contract.ReasonInvalidChild,
		contract.ReasonNamespaceNotAllowed, contract.ReasonApplyFailed, contract.ReasonChildConflict,
		contract.ReasonDriftConflict, contract.ReasonChildKeepsDisappearing, contract.ReasonForbidden,
		contract.ReasonAccessUnchecked,
	} {
		cases = append(cases, healthCase{"a failed sync, " + reason + ": degraded with the reason (kstatus: in progress)",
			parent(1, 1, false, failedSync(reason, "what went wrong")...),
			verdicts{Health{Degraded, reason + ": what went wrong"}, status.InProgressStatus, status.FailedStatus}})
	}
	return cases
}

func readScript(t *testing.T) string {
	t.Helper()
	script, err := ReadArgoCDScript(root)
	if err != nil {
		t.Fatal(err)
	}
	return script
}

// metacelExprs returns the healthCheckExprs of deploy/flux/metacel.yaml: one entry, for the
// parents' group.
func metacelExprs(t *testing.T) HealthCheckExprs {
	t.Helper()
	exprs, err := ReadFluxHealthCheckExprs(root)
	if err != nil {
		t.Fatal(err)
	}
	return oneExprs(t, exprs, "example.com/v1", "")
}

// oneExprs returns the one entry of exprs for apiVersion and kind ("": every kind).
func oneExprs(t *testing.T, exprs []HealthCheckExprs, apiVersion, kind string) HealthCheckExprs {
	t.Helper()
	var found []HealthCheckExprs
	for _, e := range exprs {
		if e.APIVersion == apiVersion && e.Kind == kind {
			found = append(found, e)
		}
	}
	if len(found) != 1 {
		t.Fatalf("%s: want one healthCheckExprs entry for apiVersion %s kind %q, got %+v", FluxFile, apiVersion, kind, exprs)
	}
	return found[0]
}

func TestArgoCDJudgesAParentByItsConditions(t *testing.T) {
	script := readScript(t)
	for _, tc := range healthCases() {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ArgoCDHealth(script, tc.parent)
			if err != nil {
				t.Fatal(err)
			}
			if got != tc.want.argo {
				t.Errorf("Argo CD: got %+v, want %+v", got, tc.want.argo)
			}
		})
	}
}

// The script judges by the conditions alone: any kind of any group gets the same verdict.
func TestArgoCDJudgesEveryKindAlike(t *testing.T) {
	script := readScript(t)
	for _, tc := range healthCases() {
		obj := tc.parent.DeepCopy()
		obj.SetAPIVersion("cache.example.org/v1alpha1")
		obj.SetKind("Memcached")
		got, err := ArgoCDHealth(script, obj)
		if err != nil || got != tc.want.argo {
			t.Errorf("%s: a Memcached got %+v, %v, want %+v as a Website", tc.name, got, err, tc.want.argo)
		}
	}
}

// kstatus, what Flux reads of an object without healthCheckExprs, calls a parent Current only
// when Ready is True and status.observedGeneration is the generation, but for one metacel has not
// synced yet (no status: Current) and one whose Ready is of an older generation than
// status.observedGeneration (which metacel never writes); it calls no parent Failed, since
// metacel writes no Stalled condition.
func TestKstatusJudgesAParent(t *testing.T) {
	for _, tc := range healthCases() {
		t.Run(tc.name, func(t *testing.T) {
			res, err := status.Compute(tc.parent)
			if err != nil {
				t.Fatal(err)
			}
			if res.Status != tc.want.kstatus {
				t.Errorf("kstatus: got %s (%s), want %s", res.Status, res.Message, tc.want.kstatus)
			}
		})
	}
}

// Flux with the healthCheckExprs of deploy/flux/metacel.yaml: Current once Ready is True at the
// generation, Failed on a failed sync or child, InProgress otherwise; a parent with no status yet
// cannot be evaluated (Unknown: Flux waits).
func TestFluxHealthCheckExprsJudgeAParent(t *testing.T) {
	exprs := metacelExprs(t)
	for _, tc := range healthCases() {
		t.Run(tc.name, func(t *testing.T) {
			got, err := FluxHealth(t.Context(), exprs, tc.parent)
			switch {
			case tc.want.flux == "" && err == nil:
				t.Errorf("Flux: got %s, want an evaluation error (Unknown)", got)
			case tc.want.flux != "" && err != nil:
				t.Errorf("Flux: %v, want %s", err, tc.want.flux)
			case got != tc.want.flux:
				t.Errorf("Flux: got %s, want %s", got, tc.want.flux)
			}
		})
	}
}

// A script that fails, returns no table or an unknown status is judged as Argo CD judges it.
func TestArgoCDHealthRunsScriptsAsArgoCD(t *testing.T) {
	obj := parent(1, 1, false, synced, ready)
	for _, tc := range []struct {
		name, script string
		want         Health
		wantErr      string
	}{
		{"a status", `return {status = "Suspended", message = obj.metadata.name}`, Health{Suspended, "hello"}, ""},
		{"an unknown status", `return {status = "Fine"}`, Health{Unknown, "Lua returned an invalid health status"}, ""},
		{"no table", `return "Healthy"`, Health{}, "expect table output"},
		{"the string library, which Argo CD leaves closed", `return {status = string.upper("healthy")}`, Health{}, "string"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ArgoCDHealth(tc.script, obj)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("got %+v, %v, want an error saying %q", got, err, tc.wantErr)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Errorf("got %+v, %v, want %+v", got, err, tc.want)
			}
		})
	}
}

// deploy/argocd/argocd-cm.yaml holds deploy/argocd/health.lua as the health check of every kind
// of the group example.com, in the resource.customizations form that allows a pattern.
func TestTheArgoCDConfigMapHoldsTheScript(t *testing.T) {
	data, err := os.ReadFile(filepath.Join(root, ArgoCDConfigMapFile))
	if err != nil {
		t.Fatal(err)
	}
	var cm struct {
		Data map[string]string `json:"data"`
	}
	if err := yaml.Unmarshal(data, &cm); err != nil {
		t.Fatal(err)
	}
	var customizations map[string]struct {
		HealthLua string `json:"health.lua"`
	}
	if err := yaml.Unmarshal([]byte(cm.Data["resource.customizations"]), &customizations); err != nil {
		t.Fatalf("resource.customizations: %v", err)
	}
	policyScript, err := ReadArgoCDPolicyScript(root)
	if err != nil {
		t.Fatal(err)
	}
	if cm.Data["resource.customizations.health.ConfigMap"] != policyScript {
		t.Errorf("the resource.customizations.health.ConfigMap of %s differs from %s", ArgoCDConfigMapFile, ArgoCDPolicyScriptFile)
	}
	entry, ok := customizations["example.com/*"]
	if !ok || len(customizations) != 1 {
		t.Fatalf("resource.customizations: want one entry, example.com/*, got %v", customizations)
	}
	if entry.HealthLua != readScript(t) {
		t.Errorf("the health.lua of %s differs from %s", ArgoCDConfigMapFile, ArgoCDScriptFile)
	}
}

// docs/gitops.md shows the shipped files as they are.
func TestTheDocsShowTheShippedFiles(t *testing.T) {
	doc, err := os.ReadFile(filepath.Join(root, DocFile))
	if err != nil {
		t.Fatal(err)
	}
	blocks, err := mdblocks.Parse(string(doc))
	if err != nil {
		t.Fatal(err)
	}
	for name, file := range map[string]string{"argocd-cm.yaml": ArgoCDConfigMapFile, "metacel.yaml": FluxFile} {
		b, err := mdblocks.Named(blocks, name)
		if err != nil {
			t.Errorf("%s: %v", DocFile, err)
			continue
		}
		want, err := os.ReadFile(filepath.Join(root, file))
		if err != nil {
			t.Fatal(err)
		}
		if b.Text != string(want) {
			t.Errorf("%s: the block (`%s`) differs from %s", DocFile, name, file)
		}
	}
}
