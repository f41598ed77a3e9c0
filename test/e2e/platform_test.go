//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"net/http"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"metacel.dev/metacel/runtime/operator"
)

// Three policies, each installing its CRD (testdata/policies/platform: a Platform makes Teams, a
// Team makes Apps, an App a Secret and a Deployment that reads it), built as platform teams
// compose operators. No child has a readyWhen. While the Apps' Pods cannot be scheduled (a color
// no node has), no Deployment has a replica available, so no App, Team or Platform is Ready; once
// they can, the Platform is Ready, and then every Deployment has its replica available. metacel
// tree shows the three levels. Deleting the Platform deletes each Deployment before the Secret it
// reads, and leaves no object.
func TestANestedPlatformIsReadyOnlyWhenItsDeploymentsAre(t *testing.T) {
	dir := filepath.Join("testdata", "policies", "platform")
	const group = "platform.e2e.metacel.dev"
	gvr := func(resource string) schema.GroupVersionResource {
		return schema.GroupVersionResource{Group: group, Version: "v1", Resource: resource}
	}
	platforms, teams, apps := gvr("platforms"), gvr("teams"), gvr("apps")
	for _, r := range []string{"platforms", "teams", "apps"} {
		t.Cleanup(func() {
			_ = cluster.dynamic.Resource(crdsGVR).Delete(context.Background(), r+"."+group, metav1.DeleteOptions{})
		})
	}
	policyNS, ns := newNamespace(t, "platform-policies"), newNamespace(t, "platform")
	grantPolicies(t, policyNS, dir)
	rt := startRuntimeWith(t, operator.Options{PolicyNamespace: policyNS})
	for _, name := range []string{"platform", "team", "app"} {
		applyConfigMap(t, installPolicyConfigMap("policy-"+name, policyNS, readFile(t, filepath.Join(dir, name+".yaml"))))
	}
	for _, r := range []string{"platforms", "teams", "apps"} {
		waitFor(t, crdsGVR, "", r+"."+group, wait, established)
	}
	createWhenServed(t, platforms, &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": platforms.GroupVersion().String(), "kind": "Platform",
		"metadata": map[string]any{"name": "p", "namespace": ns},
		"spec":     map[string]any{"teams": []any{"a", "b"}, "apps": []any{"web"}, "color": "none"},
	}})
	deployments := []string{"p-a-web", "p-b-web"}
	t.Cleanup(func() {
		if !t.Failed() {
			return
		}
		for _, o := range []struct {
			gvr  schema.GroupVersionResource
			name string
		}{{platforms, "p"}, {teams, "p-a"}, {apps, "p-a-web"}} {
			if got, err := cluster.dynamic.Resource(o.gvr).Namespace(ns).Get(context.Background(), o.name, metav1.GetOptions{}); err == nil {
				t.Logf("%s %s: status %v", o.gvr.Resource, o.name, got.Object["status"])
			} else {
				t.Logf("%s %s: %v", o.gvr.Resource, o.name, err)
			}
		}
	})

	// Pods that cannot be scheduled: every level waits, and says for what
	for _, name := range deployments {
		waitFor(t, deploymentsGVR, ns, name, wait, nil)
		waitFor(t, apps, ns, name, wait, hasCondition("Ready", "False", "ChildrenNotReady", ""))
	}
	waitFor(t, teams, ns, "p-a", wait, hasCondition("Ready", "False", "ChildrenNotReady", ""))
	waitFor(t, platforms, ns, "p", wait, func(p *unstructured.Unstructured) error {
		if err := hasCondition("Ready", "False", "ChildrenNotReady", "")(p); err != nil {
			return err
		}
		if msg, _ := condition(p, "Ready")["message"].(string); !strings.Contains(msg, "Team "+ns+"/p-a") {
			return fmt.Errorf("Ready message %q does not name the Team it waits for", msg)
		}
		return nil
	})
	if p := mustGet(t, platforms, ns, "p"); condition(p, "Ready")["status"] == "True" {
		t.Fatalf("the Platform is Ready while its Deployments have no replica available: %v", p.Object["status"])
	}

	// Pods that run on the kwok node: every level becomes Ready, the Platform last
	patch := []byte(`{"spec":{"color":"kwok"}}`)
	if _, err := cluster.dynamic.Resource(platforms).Namespace(ns).Patch(t.Context(), "p", types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, platforms, ns, "p", 3*wait, hasCondition("Ready", "True", "ChildrenReady", "2 children ready"))
	for _, name := range deployments {
		d := mustGet(t, deploymentsGVR, ns, name)
		if n, _, _ := unstructured.NestedInt64(d.Object, "status", "availableReplicas"); n < 1 {
			t.Errorf("the Platform is Ready, but Deployment %s has %d replicas available", name, n)
		}
		// the App's policy syncs it, for the App: never the outer policies, for their parents
		app := mustGet(t, apps, ns, name)
		if labels := d.GetLabels(); labels["metacel.dev/policy-name"] != "app" || labels["metacel.dev/parent-uid"] != string(app.GetUID()) {
			t.Errorf("Deployment %s is labelled %v: want policy app and its App's UID %s", name, labels, app.GetUID())
		}
	}

	out, err := exec.CommandContext(t.Context(), buildMetacel(t), "tree", "platform/p", "-n", ns, "--depth", "2",
		"--kubeconfig", cluster.kubeconfig, "--policy-namespace", policyNS).Output()
	if err != nil {
		t.Fatalf("metacel tree: %v\n%s", err, out)
	}
	for _, want := range []string{"Platform " + ns + "/p (policy platform", "Team " + ns + "/p-a (child team, policy team",
		"App " + ns + "/p-a-web (child app, policy app", "Deployment " + ns + "/p-a-web (child web)", "Secret " + ns + "/p-a-web-token (child token)"} {
		if !strings.Contains(string(out), want) {
			t.Errorf("metacel tree --depth 2 does not show %q:\n%s", want, out)
		}
	}

	before := len(rt.sentSoFar())
	if err := cluster.dynamic.Resource(platforms).Namespace(ns).Delete(t.Context(), "p", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitGone(t, platforms, ns, "p", 2*wait)
	for _, name := range deployments {
		waitGone(t, deploymentsGVR, ns, name, 2*wait)
		waitGone(t, secretsGVR, ns, name+"-token", wait)
		waitGone(t, apps, ns, name, wait)
	}
	waitGone(t, teams, ns, "p-a", wait)
	waitGone(t, teams, ns, "p-b", wait)
	deleted := map[string]int{} // path -> position among the deletes sent
	n := 0
	for _, r := range rt.sentSoFar()[before:] {
		if r.method == http.MethodDelete {
			deleted[r.path] = n
			n++
		}
	}
	for _, name := range deployments {
		d, okD := deleted["/apis/apps/v1/namespaces/"+ns+"/deployments/"+name]
		s, okS := deleted["/api/v1/namespaces/"+ns+"/secrets/"+name+"-token"]
		if !okD || !okS || d > s {
			t.Errorf("App %s: the Deployment's delete at %d (sent %v), its Secret's at %d (sent %v): want the Deployment first", name, d, okD, s, okS)
		}
	}
}

// mustGet reads an object, failing the test when it cannot.
func mustGet(t *testing.T, gvr schema.GroupVersionResource, ns, name string) *unstructured.Unstructured {
	t.Helper()
	obj, err := get(t, gvr, ns, name)
	if err != nil {
		t.Fatal(err)
	}
	return obj
}
