//go:build e2e

package e2e

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"metacel.dev/metacel/runtime/operator"
)

const serviceAccount = "system:serviceaccount:metacel-system:metacel"

// TestDeployedRBAC applies deploy/ (kustomize) and runs metacel as its ServiceAccount: the
// generated role must be enough for the five seed policies (read from the deployed ConfigMaps),
// and no wider than they need.
func TestDeployedRBAC(t *testing.T) {
	deploy := filepath.Join(repo, "deploy")
	if out, err := kubectlCmd(t.Context(), "apply", "-k", deploy); err != nil {
		t.Fatalf("kubectl apply -k deploy/: %v\n%s", err, out)
	}
	t.Cleanup(func() { _, _ = kubectlCmd(context.Background(), "delete", "-k", deploy, "--wait=false") })

	t.Run("the role is not wider than needed", func(t *testing.T) {
		for _, denied := range [][]string{
			{"get", "secrets", "-A"}, {"list", "nodes"}, {"delete", "myapps.demo.rtfm.co.ua", "-A"},
			{"create", "myapps.demo.rtfm.co.ua", "-A"}, {"update", "deployments.apps", "-A"},
			{"update", "configmaps", "-A"}, {"create", "pods", "--subresource=exec", "-A"},
			{"patch", "myapps.demo.rtfm.co.ua", "--subresource=scale", "-A"},
			{"delete", "leases.coordination.k8s.io", "-A"},
			{"create", "clusterroles.rbac.authorization.k8s.io"}, {"escalate", "clusterroles.rbac.authorization.k8s.io"},
		} {
			out, _ := kubectlCmd(t.Context(), append([]string{"auth", "can-i", "--as", serviceAccount}, denied...)...)
			if !strings.HasSuffix(strings.TrimSpace(out), "no") {
				t.Errorf("the ServiceAccount may %v: %s", denied, out)
			}
		}
	})

	startRuntimeAs(t, serviceAccount, operator.Options{PolicyNamespace: "metacel-system"})
	ns, dst := newNamespace(t, "deployed"), newNamespace(t, "deployed-dst")
	create(t, myAppsGVR, sample(t, "myapp", ns))
	create(t, memcachedsGVR, sample(t, "memcached", ns))
	configMapSync(t, ns, dst)

	t.Run("the role is enough for the seeds", func(t *testing.T) {
		waitFor(t, myAppsGVR, ns, "example-app", wait, hasCondition("Ready", "True", "", ""))
		waitFor(t, memcachedsGVR, ns, "memcached-sample", wait, hasCondition("Ready", "True", "", ""))
		waitFor(t, cmSyncsGVR, ns, "example-sync", wait, hasCondition("Ready", "True", "", ""))
		waitFor(t, configMapsGVR, dst, "app-config", wait, hasData("LOG_LEVEL", "info"))
		waitEvent(t, ns, "example-app", "Created")
		deleteObj(t, cmSyncsGVR, ns, "example-sync") // the finalizer needs patch on the parent
		waitGone(t, configMapsGVR, dst, "app-config", wait)
		waitGone(t, cmSyncsGVR, ns, "example-sync", wait)
	})
}
