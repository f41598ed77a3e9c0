//go:build e2e

package e2e

import (
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// TestHelmChartMatchesKustomize renders the Helm chart and the kustomize base: both must be
// accepted by the API server (server-side dry run) and hold the same objects with the same RBAC.
func TestHelmChartMatchesKustomize(t *testing.T) {
	helm := os.Getenv("METACEL_HELM")
	if helm == "" {
		t.Skip("METACEL_HELM is not set: run through `make e2e`, which builds helm")
	}
	ns := newNamespace(t, "helm")
	out, err := exec.CommandContext(t.Context(), helm, "template", "metacel", filepath.Join(repo, "deploy", "helm", "metacel"), "--namespace", ns).CombinedOutput()
	if err != nil {
		t.Fatalf("helm template: %v\n%s", err, out)
	}
	chart := writeTemp(t, "chart.yaml", out)
	kustomized, err := kubectlCmd(t.Context(), "kustomize", filepath.Join(repo, "deploy"))
	if err != nil {
		t.Fatalf("kubectl kustomize: %v\n%s", err, kustomized)
	}
	base := writeTemp(t, "base.yaml", []byte(kustomized))

	if out, err := kubectlCmd(t.Context(), "apply", "--dry-run=server", "-f", chart); err != nil {
		t.Errorf("the API server rejects the chart: %v\n%s", err, out)
	}
	// the names of the policies' cluster-wide RBAC hold the namespace of their ServiceAccounts
	chartText := strings.ReplaceAll(string(out), ":"+ns+":", ":metacel-system:")
	chartObjs, baseObjs := byKindAndName(readObjects(t, writeTemp(t, "chart-names.yaml", []byte(chartText)))), byKindAndName(readObjects(t, base))
	delete(baseObjs, "Namespace/metacel-system") // helm installs into an existing namespace
	if got, want := keys(chartObjs), keys(baseObjs); !reflect.DeepEqual(got, want) {
		t.Errorf("the chart renders %v, the kustomize base %v", got, want)
	}
	for _, kind := range []string{"ClusterRole/metacel", "ClusterRole/metacel-base", "Role/metacel", "ClusterRole/metacel:metacel-system:metacel-myapp"} {
		if c, b := chartObjs[kind], baseObjs[kind]; c == nil || b == nil || !reflect.DeepEqual(c.Object["rules"], b.Object["rules"]) {
			t.Errorf("%s: the chart's rules differ from the kustomize base's", kind)
		}
	}
	// both pass the container's memory limit to the runtime (METACEL_MEMORY_LIMIT)
	if c, b := containerEnv(chartObjs["Deployment/metacel"]), containerEnv(baseObjs["Deployment/metacel"]); c == nil || !reflect.DeepEqual(c, b) {
		t.Errorf("the chart's container env %v differs from the kustomize base's %v", c, b)
	}
}

// containerEnv is the env of a Deployment's first container.
func containerEnv(d *unstructured.Unstructured) any {
	if d == nil {
		return nil
	}
	cs, _, _ := unstructured.NestedSlice(d.Object, "spec", "template", "spec", "containers")
	if len(cs) == 0 {
		return nil
	}
	return cs[0].(map[string]any)["env"]
}

func writeTemp(t *testing.T, name string, data []byte) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, data, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func byKindAndName(objs []*unstructured.Unstructured) map[string]*unstructured.Unstructured {
	out := map[string]*unstructured.Unstructured{}
	for _, o := range objs {
		out[o.GetKind()+"/"+o.GetName()] = o
	}
	return out
}

func keys(m map[string]*unstructured.Unstructured) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// The chart refuses more than one replica without leader election: each would sync every parent,
// fighting over each child.
func TestHelmChartRefusesReplicasWithoutLeaderElection(t *testing.T) {
	helm := os.Getenv("METACEL_HELM")
	if helm == "" {
		t.Skip("METACEL_HELM is not set: run through `make e2e`, which builds helm")
	}
	chart := filepath.Join(repo, "deploy", "helm", "metacel")
	out, err := exec.CommandContext(t.Context(), helm, "template", "metacel", chart, "--set", "leaderElection.enabled=false").CombinedOutput()
	if err == nil || !strings.Contains(string(out), "replicas above 1 need leaderElection.enabled") {
		t.Errorf("two replicas without leader election rendered (%v):\n%.300s", err, out)
	}
	if out, err := exec.CommandContext(t.Context(), helm, "template", "metacel", chart, "--set", "leaderElection.enabled=false", "--set", "replicas=1").CombinedOutput(); err != nil {
		t.Errorf("one replica without leader election: %v\n%s", err, out)
	}
}
