//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/yaml"

	"metacel.dev/metacel/runtime/operator"
)

// TestTheReadmeTutorialRunsOnACluster follows the README's four steps on the local cluster with
// the README's own files: the CRD that `metacel crd` prints for its policy, the policy in a
// labelled ConfigMap of the policy namespace, its Website. The Website gets its ConfigMap,
// Deployment and Service, its status, Synced and then Ready (kwok runs nginx's Pod); a new
// version of the policy reaches its children.
func TestTheReadmeTutorialRunsOnACluster(t *testing.T) {
	readme := readFile(t, filepath.Join(repo, "README.md"))
	policyText := readmeBlock(t, readme, "website.yaml")
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
	startRuntimeWith(t, operator.Options{PolicyNamespace: policyNS})
	cm := &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: "policy-website", Namespace: policyNS, Labels: map[string]string{"metacel.dev/policy": "true"}},
		Data:       map[string]string{"website.yaml": policyText},
	}
	applyConfigMap(t, cm)
	ns := newNamespace(t, "tutorial")
	website := &unstructured.Unstructured{}
	if err := yaml.Unmarshal([]byte(readmeBlock(t, readme, "my-website.yaml")), &website.Object); err != nil {
		t.Fatal(err)
	}
	website.SetNamespace(ns)
	websites := schema.GroupVersionResource{Group: "example.com", Version: "v1", Resource: "websites"}
	create(t, websites, website)

	waitFor(t, configMapsGVR, ns, "hello-content", wait, hasData("index.html", "<h1>Hello</h1>"))
	waitFor(t, deploymentsGVR, ns, "hello", wait, nil)
	waitFor(t, schema.GroupVersionResource{Version: "v1", Resource: "services"}, ns, "hello", wait, nil)
	waitFor(t, websites, ns, "hello", wait, func(w *unstructured.Unstructured) error {
		if err := hasCondition("Synced", "True", "", "")(w); err != nil {
			return err
		}
		if url, want := str(w, "status", "url"), "http://hello."+ns+".svc"; url != want {
			return fmt.Errorf("status.url %q, want %q", url, want)
		}
		return hasCondition("Ready", "True", "", "")(w) // nginx available on a kwok node
	})

	// step 4: a new version of the policy
	applyConfigMap(t, withPolicy(cm, func(p string) string {
		return strings.Replace(p, `index.html: "${parent.spec.html}"`, `index.html: "<!-- v2 -->${parent.spec.html}"`, 1)
	}))
	waitFor(t, configMapsGVR, ns, "hello-content", wait, hasData("index.html", "<!-- v2 --><h1>Hello</h1>"))
}

// readmeBlock extracts from the README the code block that follows the mention of a file name,
// as the walk-through writes them: "(`website.yaml`):" then a fenced block, indented under a list
// item.
func readmeBlock(t *testing.T, readme, name string) string {
	t.Helper()
	m := regexp.MustCompile("(?s)\\(`" + regexp.QuoteMeta(name) + "`\\)[^`]*?```yaml\\n(.*?)```").FindStringSubmatch(readme)
	if m == nil {
		t.Fatalf("README: no yaml block after (`%s`)", name)
	}
	lines := strings.Split(m[1], "\n")
	for i, l := range lines {
		lines[i] = strings.TrimPrefix(l, "   ")
	}
	return strings.Join(lines, "\n")
}
