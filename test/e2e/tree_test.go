//go:build e2e

package e2e

import (
	"context"
	"encoding/json"
	"errors"
	"os/exec"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"metacel.dev/metacel/runtime/operator"
	"metacel.dev/metacel/runtime/tree"
)

// treePolicy gives a Widget a ConfigMap, a Pod that selects no node (it stays Pending, not
// ready) and a ConfigMap whose data key the API server refuses (its write fails), the last two
// unless the Widget is annotated e2e.metacel.dev/ok.
const treePolicy = `apiVersion: metacel.dev/v1alpha1
kind: CompositePolicy
metadata: {name: treed}
spec:
  parentResource: {apiVersion: e2e.metacel.dev/v1, resource: widgets, labelSelector: {matchLabels: {e2e.metacel.dev/test: tree}}}
  childResources:
    - {apiVersion: v1, resource: configmaps}
    - {apiVersion: v1, resource: pods}
  variables:
    - name: broken
      expression: "!has(parent.metadata.annotations) || !('e2e.metacel.dev/ok' in parent.metadata.annotations)"
  children:
    - id: config
      template:
        apiVersion: v1
        kind: ConfigMap
        metadata: {name: "${parent.metadata.name}-config"}
        data: {color: "${parent.spec.color}"}
    - id: pod
      includeWhen: "variables.broken"
      template:
        apiVersion: v1
        kind: Pod
        metadata: {name: "${parent.metadata.name}-pod"}
        spec:
          nodeSelector: {e2e.metacel.dev/nowhere: "true"}
          containers: [{name: app, image: nginx}]
      readyWhen: "child.?status.?phase.orValue('') == 'Running'"
    - id: refused
      includeWhen: "variables.broken"
      template: # valid offline: only the API server's Priority admission knows there is no such class
        apiVersion: v1
        kind: Pod
        metadata: {name: "${parent.metadata.name}-refused"}
        spec:
          priorityClassName: metacel-nowhere
          containers: [{name: app, image: nginx}]
`

// TestTreeShowsEachChildsState: metacel tree of a parent with a child that is not ready and a
// child whose write failed (and is missing) shows each, with the readyWhen and the API server's
// error, and exits 1; of a Ready parent it exits 0; --policy lists the failing parent first.
func TestTreeShowsEachChildsState(t *testing.T) {
	policyNS, ns := newNamespace(t, "tree-policies"), newNamespace(t, "tree")
	startRuntimeWith(t, operator.Options{PolicyNamespace: policyNS})
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "treed", Namespace: policyNS, Labels: map[string]string{"metacel.dev/policy": "true"}},
		Data: map[string]string{"policy.yaml": treePolicy}}
	applyConfigMap(t, cm)
	// only this test's Widgets: the cluster holds every earlier test's too
	broken := widget(ns, "broken")
	broken.SetLabels(map[string]string{"e2e.metacel.dev/test": "tree"})
	create(t, widgetsGVR, broken)
	fine := widget(ns, "fine")
	fine.SetLabels(map[string]string{"e2e.metacel.dev/test": "tree"})
	fine.SetAnnotations(map[string]string{"e2e.metacel.dev/ok": "true"})
	create(t, widgetsGVR, fine)
	t.Cleanup(func() { // t.Context() is done by now
		if t.Failed() { // what the runtime said of the policy, and the parents as they are
			if got, err := cluster.kube.CoreV1().ConfigMaps(policyNS).Get(context.Background(), "treed", metav1.GetOptions{}); err == nil {
				t.Logf("policy ConfigMap: labels %v, annotations %v", got.Labels, got.Annotations)
			}
			for _, name := range []string{"broken", "fine"} {
				if w, err := cluster.dynamic.Resource(widgetsGVR).Namespace(ns).Get(context.Background(), name, metav1.GetOptions{}); err == nil {
					t.Logf("widget %s: metadata %v, status %v", name, w.Object["metadata"], w.Object["status"])
				}
			}
		}
	})
	waitFor(t, widgetsGVR, ns, "fine", wait, hasCondition("Ready", "True", "", ""))
	waitFor(t, widgetsGVR, ns, "broken", wait, hasCondition("Synced", "False", "ApplyFailed", ""))

	bin := buildMetacel(t)
	run := func(args ...string) (string, error) {
		start := time.Now()
		out, err := exec.CommandContext(t.Context(), bin, append(args, "--kubeconfig", cluster.kubeconfig, "--policy-namespace", policyNS)...).Output()
		t.Logf("metacel %s: %s", strings.Join(args, " "), time.Since(start).Round(time.Millisecond))
		return string(out), err
	}
	t.Run("a parent with a child not ready and a child whose write failed", func(t *testing.T) {
		out, err := run("tree", "widget/broken", "-n", ns)
		if exit := (*exec.ExitError)(nil); !errors.As(err, &exit) || exit.ExitCode() != 1 {
			t.Errorf("exit: %v, want 1 (the parent is not Ready)", err)
		}
		for _, want := range []string{
			"Widget " + ns + "/broken (policy treed, version ",
			"Synced  False ApplyFailed: ",
			"ConfigMap " + ns + "/broken-config (child config): ready",
			"Pod " + ns + "/broken-pod (child pod): not ready: readyWhen \"child.?status.?phase.orValue('') == 'Running'\" is not true yet",
			"Pod " + ns + "/broken-refused (child refused): missing",
			"next sync: create",
			"last error: ApplyFailed: ",
		} {
			if !strings.Contains(out, want) {
				t.Errorf("tree does not show %q:\n%s", want, out)
			}
		}
		js, _ := run("tree", "widget/broken", "-n", ns, "-o", "json")
		var got tree.Tree
		if err := json.Unmarshal([]byte(js), &got); err != nil {
			t.Fatalf("tree -o json: %v\n%s", err, js)
		}
		if got.Ready || len(got.Children) != 3 || !got.Children[0].Ready || got.Children[1].Ready || !got.Children[1].Exists || got.Children[2].Exists ||
			!strings.Contains(got.Children[2].LastError, "metacel-nowhere") {
			t.Errorf("tree -o json: %+v", got)
		}
	})
	t.Run("a Ready parent", func(t *testing.T) {
		out, err := run("tree", "widgets.e2e.metacel.dev/fine", "-n", ns)
		if err != nil {
			t.Errorf("exit: %v, want 0 (the parent is Ready):\n%s", err, out)
		}
		if !strings.Contains(out, "ConfigMap "+ns+"/fine-config (child config): ready") || strings.Contains(out, "fine-pod") {
			t.Errorf("tree of the Ready parent:\n%s", out)
		}
	})
	t.Run("a policy's parents, the failing one first", func(t *testing.T) {
		out, err := run("tree", "--policy", "treed")
		if err == nil {
			t.Error("exit 0, want 1: a parent is not Ready")
		}
		lines := strings.Split(strings.TrimSpace(out), "\n")
		if len(lines) != 4 || lines[0] != "policy treed: 2 parents, 1 synced, 1 ready" ||
			!strings.HasPrefix(lines[2], "Widget "+ns+"/broken ") || !strings.HasPrefix(lines[3], "Widget "+ns+"/fine ") {
			t.Errorf("tree --policy:\n%s", out)
		}
	})
}
