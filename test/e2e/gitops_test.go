//go:build e2e

package e2e

import (
	"fmt"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/rand"
	"sigs.k8s.io/cli-utils/pkg/kstatus/status"

	"metacel.dev/metacel/test/gitops"
)

// probePolicy syncs the Probes of group: a ConfigMap, ready unless spec.state is "waiting"; a
// Job no node can run, which fails at its one-second deadline, when spec.state is "failing"; and
// a validation that refuses spec.state "invalid".
func probePolicy(group string) string {
	return `apiVersion: metacel.dev/v1alpha1
kind: CompositePolicy
metadata: {name: probe}
spec:
  parentResource: {apiVersion: ` + group + `/v1, resource: probes}
  childResources:
    - {apiVersion: v1, resource: configmaps}
    - {apiVersion: batch/v1, resource: jobs}
  validations:
    - expression: "parent.spec.?state.orValue('') != 'invalid'"
      message: "spec.state must not be invalid"
  children:
    - id: config
      template:
        apiVersion: v1
        kind: ConfigMap
        metadata: {name: "${parent.metadata.name}-probe"}
        data: {state: "${parent.spec.?state.orValue('')}"}
      readyWhen: "parent.spec.?state.orValue('') != 'waiting'"
    - id: job
      includeWhen: "parent.spec.?state.orValue('') == 'failing'"
      template:
        apiVersion: batch/v1
        kind: Job
        metadata: {name: "${parent.metadata.name}-once"}
        spec:
          backoffLimit: 0
          activeDeadlineSeconds: 1
          template:
            spec:
              restartPolicy: Never
              nodeSelector: {type: none}
              containers: [{name: once, image: busybox}]
`
}

// gitopsVerdict is a parent's health as Argo CD (the Lua health check metacel ships), kstatus
// and Flux's healthCheckExprs (those metacel ships) judge it; flux "" is an expression that cannot
// evaluate yet (Unknown).
type gitopsVerdict struct {
	argo    string
	kstatus status.Status
	flux    status.Status
}

// TestGitOpsToolsJudgeAParentAsTheDocsSay creates real parents in each state metacel puts them
// in and judges them as docs/gitops.md says Argo CD and Flux do: progressing while a child is not
// ready, degraded with the reason of a failed sync or child (kstatus: in progress), healthy once
// Ready; with the runtime stopped, a changed spec is progressing until synced, and a new parent
// progressing for Argo CD and Flux's expressions while kstatus calls it Current.
func TestGitOpsToolsJudgeAParentAsTheDocsSay(t *testing.T) {
	group := rand.String(8) + ".gitops.e2e.metacel.dev"
	probes := schema.GroupVersionResource{Group: group, Version: "v1", Resource: "probes"}
	crd := "probes." + group
	applyCRD(t, crdYAMLIn(group, "probes", "Probe", "Namespaced", "state: {type: string}", "note: {type: string}"), crd)
	t.Cleanup(func() { _ = cluster.dynamic.Resource(crdsGVR).Delete(t.Context(), crd, metav1.DeleteOptions{}) })
	script, err := gitops.ReadArgoCDScript(repo)
	if err != nil {
		t.Fatal(err)
	}
	all, err := gitops.ReadFluxHealthCheckExprs(repo)
	if err != nil {
		t.Fatal(err)
	}
	// the parents' entry (the other judges the policy ConfigMaps)
	var exprs []gitops.HealthCheckExprs
	for _, e := range all {
		if e.APIVersion == "example.com/v1" && e.Kind == "" {
			exprs = append(exprs, e)
		}
	}
	if len(exprs) != 1 {
		t.Fatalf("%s: %d healthCheckExprs for every kind of example.com/v1, want 1", gitops.FluxFile, len(exprs))
	}
	judge := func(obj *unstructured.Unstructured) (gitopsVerdict, string) {
		argo, err := gitops.ArgoCDHealth(script, obj)
		if err != nil {
			t.Fatalf("Argo CD: %v", err)
		}
		k, err := status.Compute(obj)
		if err != nil {
			t.Fatalf("kstatus: %v", err)
		}
		flux, _ := gitops.FluxHealth(t.Context(), exprs[0], obj)
		return gitopsVerdict{argo.Status, k.Status, flux}, argo.Message
	}
	expect := func(name string, obj *unstructured.Unstructured, want gitopsVerdict, message string) {
		t.Helper()
		got, msg := judge(obj)
		t.Logf("%s: Argo CD %s %q, kstatus %s, Flux %q", name, got.argo, msg, got.kstatus, got.flux)
		if got != want || msg != message {
			t.Errorf("%s: got %+v %q, want %+v %q", name, got, msg, want, message)
		}
	}

	rt := startRuntime(t, writePolicy(t, probePolicy(group)))
	ns := newNamespace(t, "gitops")
	probe := func(name, state string) *unstructured.Unstructured {
		return &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": group + "/v1", "kind": "Probe",
			"metadata": map[string]any{"name": name, "namespace": ns},
			"spec":     map[string]any{"state": state},
		}}
	}
	for _, state := range []string{"waiting", "ready", "invalid", "failing"} {
		create(t, probes, probe(state, state))
	}

	waiting := waitFor(t, probes, ns, "waiting", wait, hasCondition("Ready", "False", "ChildrenNotReady", ""))
	expect("a child not ready", waiting, gitopsVerdict{gitops.Progressing, status.InProgressStatus, status.InProgressStatus},
		"ChildrenNotReady: "+conditionMessage(waiting, "Ready"))
	ready := waitFor(t, probes, ns, "ready", wait, hasCondition("Ready", "True", "ChildrenReady", ""))
	expect("ready", ready, gitopsVerdict{gitops.Healthy, status.CurrentStatus, status.CurrentStatus}, "ChildrenReady: 1 child ready")
	invalid := waitFor(t, probes, ns, "invalid", wait, hasCondition("Synced", "False", "ValidationFailed", ""))
	expect("a failed sync", invalid, gitopsVerdict{gitops.Degraded, status.InProgressStatus, status.FailedStatus},
		"ValidationFailed: "+conditionMessage(invalid, "Synced"))
	failing := waitFor(t, probes, ns, "failing", wait, hasCondition("Ready", "False", "ChildFailed", ""))
	expect("a failed child", failing, gitopsVerdict{gitops.Degraded, status.InProgressStatus, status.FailedStatus},
		"ChildFailed: "+conditionMessage(failing, "Ready"))

	// with no runtime, a change of spec stays unsynced and a new parent gets no status
	rt.stop()
	changed, err := cluster.dynamic.Resource(probes).Namespace(ns).Patch(t.Context(), "ready", types.MergePatchType,
		[]byte(`{"spec":{"note":"changed"}}`), metav1.PatchOptions{})
	if err != nil {
		t.Fatal(err)
	}
	expect("a spec metacel has not synced", changed, gitopsVerdict{gitops.Progressing, status.InProgressStatus, status.InProgressStatus},
		fmt.Sprintf("metacel has not synced generation %d yet (status of generation %d)", changed.GetGeneration(), ready.GetGeneration()))
	fresh := create(t, probes, probe("fresh", "ready"))
	expect("a parent metacel has not synced", fresh, gitopsVerdict{gitops.Progressing, status.CurrentStatus, ""},
		"waiting for metacel to sync the parent")
}

// conditionMessage is the message of an object's condition.
func conditionMessage(obj *unstructured.Unstructured, typ string) string {
	m, _ := condition(obj, typ)["message"].(string)
	return m
}
