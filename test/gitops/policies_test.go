package gitops

import (
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/cli-utils/pkg/kstatus/status"

	"metacel.dev/metacel/runtime/contract"
	"metacel.dev/metacel/runtime/policystatus"
)

// configMap is a ConfigMap with these labels (nil: none) and annotations.
func configMap(labels, annotations map[string]any) *unstructured.Unstructured {
	meta := map[string]any{"name": "myapp", "namespace": "metacel-system"}
	if labels != nil {
		meta["labels"] = labels
	}
	if annotations != nil {
		meta["annotations"] = annotations
	}
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta, "data": map[string]any{"policy.yaml": "..."},
	}}
}

// policy is a policy ConfigMap in state ("": none yet), with lastError if not "".
func policy(state policystatus.State, lastError string) *unstructured.Unstructured {
	labels := map[string]any{contract.LabelPolicyConfigMap: "true"}
	if state != "" {
		labels[contract.LabelPolicyState] = string(state)
	}
	var annotations map[string]any
	if lastError != "" {
		annotations = map[string]any{contract.AnnotationPolicyLastError: lastError}
	}
	return configMap(labels, annotations)
}

// policyCases are policy ConfigMaps in each state the runtime labels them with, and ConfigMaps
// that are no policy, as Argo CD (deploy/argocd/policy-health.lua) and Flux (the
// healthCheckExprs of the Kustomization metacel-policies) judge them.
func policyCases() []struct {
	name string
	cm   *unstructured.Unstructured
	argo Health
	flux status.Status
} {
	return []struct {
		name string
		cm   *unstructured.Unstructured
		argo Health
		flux status.Status
	}{
		{"not loaded yet: progressing", policy("", ""), Health{Progressing, "waiting for metacel to load the policy"}, status.InProgressStatus},
		{"running: healthy", policy(policystatus.Running, ""), Health{Healthy, "Running"}, status.CurrentStatus},
		{"rolling out: progressing", policy(policystatus.RollingOut, ""), Health{Progressing, "RollingOut"}, status.InProgressStatus},
		{"waiting for its CRD: progressing", policy(policystatus.Waiting, ""), Health{Progressing, "Waiting"}, status.InProgressStatus},
		{"caches not synced: progressing, with the error", policy(policystatus.NotSynced, "forbidden: list websites"),
			Health{Progressing, "NotSynced: forbidden: list websites"}, status.InProgressStatus},
		{"invalid (or in conflict with another policy): degraded, with the error", policy(policystatus.Invalid, "spec.parentResource: conflicts with policy other"),
			Health{Degraded, "Invalid: spec.parentResource: conflicts with policy other"}, status.FailedStatus},
		{"rolled back: degraded", policy(policystatus.RolledBack, "step 2 of 3 failed"), Health{Degraded, "RolledBack: step 2 of 3 failed"}, status.FailedStatus},
		{"a ConfigMap with no labels: healthy", configMap(nil, nil), Health{Healthy, ""}, status.CurrentStatus},
		{"a ConfigMap that is no policy: healthy", configMap(map[string]any{"app": "x", contract.LabelPolicyState: "Invalid"}, nil), Health{Healthy, ""}, status.CurrentStatus},
		{"a ConfigMap labelled policy=false: healthy", configMap(map[string]any{contract.LabelPolicyConfigMap: "false"}, nil), Health{Healthy, ""}, status.CurrentStatus},
	}
}

func TestArgoCDJudgesAPolicyByItsState(t *testing.T) {
	script, err := ReadArgoCDPolicyScript(root)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range policyCases() {
		got, err := ArgoCDHealth(script, tc.cm)
		if err != nil || got != tc.argo {
			t.Errorf("%s: Argo CD: got %+v, %v, want %+v", tc.name, got, err, tc.argo)
		}
	}
}

// Flux waits for the Kustomization metacel-policies until every policy runs, and fails it on
// one that will not.
func TestFluxHealthCheckExprsJudgeAPolicy(t *testing.T) {
	all, err := ReadFluxHealthCheckExprs(root)
	if err != nil {
		t.Fatal(err)
	}
	exprs := oneExprs(t, all, "v1", "ConfigMap")
	for _, tc := range policyCases() {
		got, err := FluxHealth(t.Context(), exprs, tc.cm)
		if err != nil || got != tc.flux {
			t.Errorf("%s: Flux: got %s, %v, want %s", tc.name, got, err, tc.flux)
		}
	}
}
