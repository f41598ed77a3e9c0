//go:build e2e

package e2e

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"metacel.dev/metacel/runtime/operator"
)

// pluggedPolicy gives this test's Widgets a ConfigMap.
const pluggedPolicy = `apiVersion: metacel.dev/v1alpha1
kind: CompositePolicy
metadata: {name: plugged}
spec:
  parentResource: {apiVersion: e2e.metacel.dev/v1, resource: widgets, labelSelector: {matchLabels: {e2e.metacel.dev/test: plugin}}}
  childResources:
    - {apiVersion: v1, resource: configmaps}
  children:
    - id: config
      template:
        apiVersion: v1
        kind: ConfigMap
        metadata: {name: "${parent.metadata.name}-config"}
        data: {color: "${parent.spec.color}"}
`

// TestKubectlMetacelTreeWithAContext: with a kubeconfig of two contexts whose current one reaches
// no cluster, `kubectl-metacel tree KIND/NAME --context X` shows the parent of X's namespace, and
// so does `kubectl metacel` (kubectl finding the plugin on $PATH), whose usage names it so;
// without --context it fails; kubectl's completion of the plugin offers the parent's name.
func TestKubectlMetacelTreeWithAContext(t *testing.T) {
	policyNS, ns := newNamespace(t, "plugin-policies"), newNamespace(t, "plugin")
	startRuntimeWith(t, operator.Options{PolicyNamespace: policyNS})
	applyConfigMap(t, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "plugged", Namespace: policyNS, Labels: map[string]string{"metacel.dev/policy": "true"}},
		Data: map[string]string{"policy.yaml": pluggedPolicy}})
	w := widget(ns, "socket")
	w.SetLabels(map[string]string{"e2e.metacel.dev/test": "plugin"})
	create(t, widgetsGVR, w)
	waitFor(t, widgetsGVR, ns, "socket", wait, hasCondition("Ready", "True", "", ""))

	binDir := buildKubectlMetacel(t)
	kubeconfig := twoContextKubeconfig(t, ns)
	env := append(os.Environ(), "PATH="+binDir+string(os.PathListSeparator)+cluster.bin+string(os.PathListSeparator)+os.Getenv("PATH"), "KUBECONFIG="+kubeconfig)
	run := func(name string, args ...string) (string, error) {
		t.Helper()
		start := time.Now()
		cmd := exec.CommandContext(t.Context(), name, args...)
		cmd.Env = env
		var errOut bytes.Buffer
		cmd.Stderr = &errOut
		out, err := cmd.Output()
		t.Logf("%s %s: %s", name, strings.Join(args, " "), time.Since(start).Round(time.Millisecond))
		return string(out) + errOut.String(), err
	}
	wantTree := "Widget " + ns + "/socket (policy plugged, version "
	for _, tt := range []struct {
		name string
		cmd  []string
	}{
		{"kubectl-metacel", []string{filepath.Join(binDir, "kubectl-metacel")}},
		{"kubectl metacel", []string{filepath.Join(cluster.bin, "kubectl"), "metacel"}},
	} {
		t.Run(tt.name+" tree --context", func(t *testing.T) {
			out, err := run(tt.cmd[0], append(tt.cmd[1:], "tree", "widget/socket", "--context", "plugin-e2e", "--policy-namespace", policyNS)...)
			if err != nil || !strings.Contains(out, wantTree) || !strings.Contains(out, "ConfigMap "+ns+"/socket-config (child config): ready") {
				t.Errorf("%v, want exit 0 and the tree of the Widget of the context's namespace:\n%s", err, out)
			}
		})
		t.Run(tt.name+" tree without --context: the current context reaches no cluster", func(t *testing.T) {
			out, err := run(tt.cmd[0], append(tt.cmd[1:], "tree", "widget/socket", "--policy-namespace", policyNS)...)
			if err == nil || !strings.Contains(out, "cannot reach the cluster") {
				t.Errorf("%v, want the broken current context refused:\n%s", err, out)
			}
		})
	}
	t.Run("kubectl metacel's usage", func(t *testing.T) {
		out, err := run(filepath.Join(cluster.bin, "kubectl"), "metacel", "tree", "--help")
		if err != nil || !strings.Contains(out, "kubectl metacel tree KIND/NAME") {
			t.Errorf("%v, want the usage of kubectl metacel tree:\n%s", err, out)
		}
	})
	t.Run("kubectl's completion of the plugin", func(t *testing.T) {
		out, err := run(filepath.Join(cluster.bin, "kubectl"), "__complete", "metacel", "tree", "--context", "plugin-e2e", "--policy-namespace", policyNS, "widget/s")
		if lines := strings.Split(strings.TrimSpace(out), "\n"); err != nil || !slices.Contains(lines, "widget/socket") {
			t.Errorf("%v, want widget/socket offered:\n%s", err, out)
		}
	})
}

// buildKubectlMetacel makes kubectl-metacel, the kubectl plugin, as `make kubectl-metacel` does
// (the metacel binary under the plugin's name, which it reads from its argv[0]), in a directory of
// its own with kubectl_complete-metacel, and returns the directory.
func buildKubectlMetacel(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	if err := os.Symlink(buildMetacel(t), filepath.Join(dir, "kubectl-metacel")); err != nil {
		t.Fatal(err)
	}
	script, err := os.ReadFile(filepath.Join(repo, "deploy", "krew", "kubectl_complete-metacel"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "kubectl_complete-metacel"), script, 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

// twoContextKubeconfig writes the test cluster's kubeconfig with a second context, plugin-e2e:
// the same cluster and user, in namespace ns; the current context is a third, of a cluster that
// does not answer, so that only --context plugin-e2e reaches the cluster.
func twoContextKubeconfig(t *testing.T, ns string) string {
	t.Helper()
	cfg, err := clientcmd.LoadFromFile(cluster.kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	current := cfg.Contexts[cfg.CurrentContext]
	if current == nil {
		t.Fatalf("the test cluster's kubeconfig has no current context %q", cfg.CurrentContext)
	}
	cfg.Contexts["plugin-e2e"] = &clientcmdapi.Context{Cluster: current.Cluster, AuthInfo: current.AuthInfo, Namespace: ns}
	cfg.Clusters["nowhere"] = &clientcmdapi.Cluster{Server: "https://127.0.0.1:1"}
	cfg.Contexts["nowhere"] = &clientcmdapi.Context{Cluster: "nowhere", AuthInfo: current.AuthInfo}
	cfg.CurrentContext = "nowhere"
	path := filepath.Join(t.TempDir(), "kubeconfig")
	if err := clientcmd.WriteToFile(*cfg, path); err != nil {
		t.Fatal(err)
	}
	return path
}
