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
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/yaml"

	"metacel.dev/metacel/runtime/operator"
	"metacel.dev/metacel/test/mdblocks"
)

// TestTheReadmeTutorialRunsOnACluster follows the README's two steps on the local cluster with
// the README's own files: its website.yaml (a policy ConfigMap that installs the Website CRD)
// applied in one kubectl apply with what `metacel rbac` prints for it, then its Website, with no
// CRD applied by hand. The Website gets its ConfigMap, Deployment and Service, its status, Synced
// and then Ready (kwok runs nginx's Pod, so the Deployment's readyWhen sees it available), with no
// failed sync on the way (no Warning event); the file edited and applied again reaches the
// children.
func TestTheReadmeTutorialRunsOnACluster(t *testing.T) {
	blocks, err := mdblocks.Parse(readFile(t, filepath.Join(repo, "README.md")))
	if err != nil {
		t.Fatalf("README: %v", err)
	}
	policyNS := newNamespace(t, "policies")
	// the README's policy namespace is the runtime's default; the test's runtime has its own
	policyText := strings.Replace(readmeBlock(t, blocks, "website.yaml"), "namespace: metacel-system", "namespace: "+policyNS, 1)
	dir := t.TempDir()
	policyFile := filepath.Join(dir, "website.yaml")
	if err := os.WriteFile(policyFile, []byte(policyText), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_, _ = kubectlCmd(context.Background(), "delete", "crd", "websites.example.com", "--ignore-not-found")
	})
	startRuntimeWith(t, operator.Options{PolicyNamespace: policyNS})

	// step 2: one kubectl apply of the policy's RBAC, as metacel rbac prints it, and of the policy
	rbacYAML, err := exec.CommandContext(t.Context(), buildMetacel(t), "rbac", "--namespace", policyNS, policyFile).Output()
	if err != nil {
		t.Fatalf("metacel rbac: %v", err)
	}
	rbacFile := writeTemp(t, "rbac.yaml", rbacYAML)
	t.Cleanup(func() { _, _ = kubectlCmd(context.Background(), "delete", "-f", rbacFile, "--wait=false") })
	if out, err := kubectlCmd(t.Context(), "apply", "-f", rbacFile, "-f", policyFile); err != nil {
		t.Fatalf("kubectl apply of metacel rbac's output and website.yaml: %v\n%s", err, out)
	}
	ns := newNamespace(t, "tutorial")
	website := &unstructured.Unstructured{}
	if err := yaml.Unmarshal([]byte(readmeBlock(t, blocks, "my-website.yaml")), &website.Object); err != nil {
		t.Fatal(err)
	}
	website.SetNamespace(ns)
	websites := schema.GroupVersionResource{Group: "example.com", Version: "v1", Resource: "websites"}
	createWhenServed(t, websites, website)

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

	// edit website.yaml and apply it again: a new version of the policy
	edited := strings.Replace(policyText, `index.html: "${parent.spec.html}"`, `index.html: "<!-- v2 -->${parent.spec.html}"`, 1)
	if err := os.WriteFile(policyFile, []byte(edited), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := kubectlCmd(t.Context(), "apply", "-f", policyFile); err != nil {
		t.Fatalf("kubectl apply -f website.yaml: %v\n%s", err, out)
	}
	waitFor(t, configMapsGVR, ns, "hello-content", wait, hasData("index.html", "<!-- v2 --><h1>Hello</h1>"))
	waitFor(t, websites, ns, "hello", wait, hasCondition("Synced", "True", "Synced", "3 children applied"))
	noWarnings(t, ns, "hello")
}

// createWhenServed creates obj, trying again while the API server does not serve its kind yet (a
// CRD just installed is Established a moment before its objects can be created).
func createWhenServed(t testing.TB, gvr schema.GroupVersionResource, obj *unstructured.Unstructured) {
	t.Helper()
	eventually(t, wait, fmt.Sprintf("create %s %s", gvr.Resource, obj.GetName()), func() error {
		_, err := cluster.dynamic.Resource(gvr).Namespace(obj.GetNamespace()).Create(t.Context(), obj, metav1.CreateOptions{})
		if apierrors.IsAlreadyExists(err) {
			return nil
		}
		return err
	})
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
