//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/yaml"

	"metacel.dev/metacel/runtime/operator"
	"metacel.dev/metacel/test/mdblocks"
)

// TestTheReadmeTutorialRunsOnACluster follows the README's four steps on the local cluster with
// the README's own files: the CRD that `metacel crd` prints for its policy, the policy in a
// labelled ConfigMap of the policy namespace, its Website. The Website gets its ConfigMap,
// Deployment and Service, its status, Synced and then Ready (kwok runs nginx's Pod, so the
// Deployment's readyWhen sees it available), with no failed sync on the way (no Warning event);
// a new version of the policy reaches its children.
func TestTheReadmeTutorialRunsOnACluster(t *testing.T) {
	blocks, err := mdblocks.Parse(readFile(t, filepath.Join(repo, "README.md")))
	if err != nil {
		t.Fatalf("README: %v", err)
	}
	policyText := readmeBlock(t, blocks, "website.yaml")
	dir := t.TempDir()
	policyFile := filepath.Join(dir, "website.yaml")
	if err := os.WriteFile(policyFile, []byte(policyText), 0o644); err != nil {
		t.Fatal(err)
	}
	crd, err := exec.CommandContext(t.Context(), buildMetacel(t), "crd", policyFile).Output()
	if err != nil {
		t.Fatalf("metacel crd: %v", err)
	}
	applyCRD(t, string(crd), "websites.example.com")
	t.Cleanup(func() { _, _ = kubectlCmd(context.Background(), "delete", "crd", "websites.example.com") })

	policyNS := newNamespace(t, "policies")
	// step 3: the policy's ServiceAccount and its RBAC, as metacel rbac prints them
	rbacYAML, err := exec.CommandContext(t.Context(), buildMetacel(t), "rbac", "--namespace", policyNS, policyFile).Output()
	if err != nil {
		t.Fatalf("metacel rbac: %v", err)
	}
	rbacFile := writeTemp(t, "rbac.yaml", rbacYAML)
	if out, err := kubectlCmd(t.Context(), "apply", "-f", rbacFile); err != nil {
		t.Fatalf("kubectl apply metacel rbac's output: %v\n%s", err, out)
	}
	t.Cleanup(func() { _, _ = kubectlCmd(context.Background(), "delete", "-f", rbacFile, "--wait=false") })
	startRuntimeWith(t, operator.Options{PolicyNamespace: policyNS})
	cm := &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: "policy-website", Namespace: policyNS, Labels: map[string]string{"metacel.dev/policy": "true"}},
		Data:       map[string]string{"website.yaml": policyText},
	}
	applyConfigMap(t, cm)
	ns := newNamespace(t, "tutorial")
	website := &unstructured.Unstructured{}
	if err := yaml.Unmarshal([]byte(readmeBlock(t, blocks, "my-website.yaml")), &website.Object); err != nil {
		t.Fatal(err)
	}
	website.SetNamespace(ns)
	websites := schema.GroupVersionResource{Group: "example.com", Version: "v1", Resource: "websites"}
	create(t, websites, website)

	waitFor(t, configMapsGVR, ns, "hello-content", wait, hasData("index.html", "<h1>Hello</h1>"))
	waitFor(t, deploymentsGVR, ns, "hello", wait, nil)
	waitFor(t, schema.GroupVersionResource{Version: "v1", Resource: "services"}, ns, "hello", wait, nil)
	waitFor(t, websites, ns, "hello", wait, func(w *unstructured.Unstructured) error {
		if err := hasCondition("Synced", "True", "Synced", "3 children applied")(w); err != nil {
			return err
		}
		if url, want := str(w, "status", "url"), "http://hello."+ns+".svc"; url != want {
			return fmt.Errorf("status.url %q, want %q", url, want)
		}
		// nginx available on a kwok node: the Deployment's readyWhen holds
		return hasCondition("Ready", "True", "ChildrenReady", "3 children ready")(w)
	})
	noWarnings(t, ns, "hello")

	// step 4: a new version of the policy
	applyConfigMap(t, withPolicy(cm, func(p string) string {
		return strings.Replace(p, `index.html: "${parent.spec.html}"`, `index.html: "<!-- v2 -->${parent.spec.html}"`, 1)
	}))
	waitFor(t, configMapsGVR, ns, "hello-content", wait, hasData("index.html", "<!-- v2 --><h1>Hello</h1>"))
	waitFor(t, websites, ns, "hello", wait, hasCondition("Synced", "True", "Synced", "3 children applied"))
	noWarnings(t, ns, "hello")
}

// readmeBlock returns the README's code block that the tutorial names name: "(`website.yaml`):"
// then a fenced block, indented under a list item.
func readmeBlock(t *testing.T, blocks []mdblocks.Block, name string) string {
	t.Helper()
	b, err := mdblocks.Named(blocks, name)
	if err != nil {
		t.Fatalf("README: %v", err)
	}
	return b.Text
}

// noWarnings fails the test when metacel reported a Warning Event about an object of ns: a sync
// of it failed (a Synced=False condition is such an event too).
func noWarnings(t *testing.T, ns, regarding string) {
	t.Helper()
	list, err := cluster.kube.EventsV1().Events(ns).List(t.Context(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range list.Items {
		if e.Regarding.Name == regarding && e.Type == corev1.EventTypeWarning && e.ReportingController == "metacel" {
			t.Errorf("Warning %s about %s %s: %s", e.Reason, e.Regarding.Kind, regarding, e.Note)
		}
	}
}
