//go:build e2e

package e2e

import (
	"context"
	"encoding/json"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"metacel.dev/metacel/runtime/operator"
	"metacel.dev/metacel/runtime/tree"
)

// TestTreeShowsANestedParentsOwnTree: of two nested policies, each installing its parent's CRD
// (testdata/policies/nested: a Team makes an App, an App a ConfigMap), metacel tree of a Team
// shows the App with its own policy, conditions and ConfigMap beneath it; --depth 0 shows the
// App alone; -o json nests the App's tree under the App.
func TestTreeShowsANestedParentsOwnTree(t *testing.T) {
	dir := filepath.Join("testdata", "policies", "nested")
	const group = "nested.e2e.metacel.dev"
	teams := schema.GroupVersionResource{Group: group, Version: "v1", Resource: "teams"}
	apps := schema.GroupVersionResource{Group: group, Version: "v1", Resource: "apps"}
	for _, crd := range []string{"teams." + group, "apps." + group} {
		t.Cleanup(func() {
			_ = cluster.dynamic.Resource(crdsGVR).Delete(context.Background(), crd, metav1.DeleteOptions{})
		})
	}
	policyNS, ns := newNamespace(t, "nested-policies"), newNamespace(t, "nested")
	grantPolicies(t, policyNS, dir)
	startRuntimeWith(t, operator.Options{PolicyNamespace: policyNS})
	for _, name := range []string{"team", "app"} {
		applyConfigMap(t, installPolicyConfigMap("policy-nested-"+name, policyNS, readFile(t, filepath.Join(dir, name+".yaml"))))
	}
	waitFor(t, crdsGVR, "", "teams."+group, wait, established)
	createWhenServed(t, teams, &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": teams.GroupVersion().String(), "kind": "Team",
		"metadata": map[string]any{"name": "core", "namespace": ns}, "spec": map[string]any{"color": "teal"},
	}})
	waitFor(t, teams, ns, "core", wait, hasCondition("Ready", "True", "", ""))
	waitFor(t, apps, ns, "core-app", wait, hasCondition("Ready", "True", "", ""))
	t.Cleanup(func() {
		if t.Failed() {
			for _, o := range []struct {
				gvr  schema.GroupVersionResource
				name string
			}{{teams, "core"}, {apps, "core-app"}} {
				if got, err := cluster.dynamic.Resource(o.gvr).Namespace(ns).Get(context.Background(), o.name, metav1.GetOptions{}); err == nil {
					t.Logf("%s %s: metadata %v, status %v", o.gvr.Resource, o.name, got.Object["metadata"], got.Object["status"])
				}
			}
		}
	})

	bin := buildMetacel(t)
	run := func(args ...string) string {
		t.Helper()
		start := time.Now()
		out, err := exec.CommandContext(t.Context(), bin, append(args, "--kubeconfig", cluster.kubeconfig, "--policy-namespace", policyNS)...).Output()
		t.Logf("metacel %s: %s", strings.Join(args, " "), time.Since(start).Round(time.Millisecond))
		if err != nil {
			t.Errorf("metacel %s: %v, want exit 0 (the Team is Ready):\n%s", strings.Join(args, " "), err, out)
		}
		return string(out)
	}
	t.Run("the App's own tree beneath it, one level down by default", func(t *testing.T) {
		out := run("tree", "team/core", "-n", ns)
		lines := strings.Split(strings.TrimSpace(out), "\n")
		want := []string{ // each line's start: the messages and versions are the runtime's
			"Team " + ns + "/core (policy nested-team, version ",
			"├── Synced  True  Synced: ",
			"├── Ready   True  ChildrenReady: ",
			"└── App " + ns + "/core-app (child app, policy nested-app, version ",
			"    ├── Synced  True  Synced: ",
			"    ├── Ready   True  ChildrenReady: ",
			"    └── ConfigMap " + ns + "/core-app-config (child config): ready",
		}
		if len(lines) != len(want) {
			t.Fatalf("tree: %d lines, want %d:\n%s", len(lines), len(want), out)
		}
		for i, w := range want {
			if !strings.HasPrefix(lines[i], w) {
				t.Errorf("tree line %d is %q, want it to start %q:\n%s", i+1, lines[i], w, out)
			}
		}
	})
	t.Run("--depth 0: the Team's children only", func(t *testing.T) {
		out := run("tree", "teams."+group+"/core", "-n", ns, "--depth", "0")
		if !strings.Contains(out, "└── App "+ns+"/core-app (child app): ready") || strings.Contains(out, "core-app-config") {
			t.Errorf("tree --depth 0:\n%s", out)
		}
	})
	t.Run("-o json nests the App's tree", func(t *testing.T) {
		js := run("tree", "team/core", "-n", ns, "-o", "json")
		var got tree.Tree
		if err := json.Unmarshal([]byte(js), &got); err != nil {
			t.Fatalf("tree -o json: %v\n%s", err, js)
		}
		if !got.Ready || len(got.Children) != 1 || got.Children[0].Tree == nil {
			t.Fatalf("tree -o json: %s", js)
		}
		app := got.Children[0].Tree
		if app.Policy != "nested-app" || !app.Ready || app.Parent.Name != "core-app" || len(app.Children) != 1 ||
			app.Children[0].Name != "core-app-config" || !app.Children[0].Ready || app.Children[0].Tree != nil {
			t.Errorf("the App's tree in -o json: %+v", app)
		}
	})
}
