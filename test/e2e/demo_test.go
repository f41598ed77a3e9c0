//go:build e2e

package e2e

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"metacel.dev/metacel/runtime/operator"
	"metacel.dev/metacel/runtime/rollout"
)

// TestDemoShowsChildrenAndTrees runs `hack/demo.sh show` (what `make demo` shows once its parents
// are Ready) on the shared cluster, over a MyApp its policy synced: it lists the MyApp's Pod, not
// the policy's rollout record (a ConfigMap that carries metacel's managed-by label too), and shows
// the MyApp's `metacel tree` with its Pod.
func TestDemoShowsChildrenAndTrees(t *testing.T) {
	bin := buildMetacel(t)
	policyNS := newNamespace(t, "policies")
	gens := &generations{}
	startRuntimeWith(t, operator.Options{PolicyNamespace: policyNS, OnReload: gens.set})
	applyConfigMap(t, policyConfigMap(t, "myapp", policyNS))
	gens.waitFor(t, "myapp", 1)
	ns := newNamespace(t, "demo")
	create(t, myAppsGVR, sample(t, "myapp", ns))
	waitFor(t, myAppsGVR, ns, "example-app", time.Minute, hasCondition("Ready", "True", "", ""))
	eventually(t, 10*time.Second, "the policy's rollout record written", func() error {
		_, err := rolloutRecord(t, policyNS)
		return err
	})

	show := exec.CommandContext(t.Context(), filepath.Join(repo, "hack", "demo.sh"), "show")
	show.Env = append(os.Environ(), "KUBECONFIG="+cluster.kubeconfig, "METACEL_BIN="+bin,
		"METACEL_DEMO_PARENTS=myapps", "METACEL_DEMO_POLICY_NAMESPACE="+policyNS)
	raw, err := show.CombinedOutput()
	out := string(raw)
	if err != nil {
		t.Fatalf("hack/demo.sh show: %v\n%s", err, out)
	}
	children, tree, found := strings.Cut(out, "==> metacel tree MyApp/example-app -n "+ns)
	if !found {
		t.Fatalf("no tree of MyApp %s/example-app:\n%s", ns, out)
	}
	for _, tt := range []struct {
		name, in, want string
		present        bool
	}{
		{"the children list the MyApp's Pod", children, "pod/example-app-pod", true},
		{"the children leave out the rollout record", children, rollout.ConfigMapName("myapp"), false},
		{"the tree shows the policy", tree, "myapp", true},
		{"the tree shows the Pod", tree, "example-app-pod", true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if strings.Contains(tt.in, tt.want) != tt.present {
				t.Errorf("%q in the output: %t, want %t:\n%s", tt.want, !tt.present, tt.present, out)
			}
		})
	}
}
