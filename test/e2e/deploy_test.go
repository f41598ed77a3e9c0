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

// TestDeployedRBAC applies deploy/ (kustomize) and runs metacel as its ServiceAccount, with a
// token of its own: each seed policy (read from the deployed ConfigMaps) acts as its own
// ServiceAccount, whose role must be enough for it; the runtime's may read what the policies use
// but write none of it, and only members of the policy authors' group may write a policy.
func TestDeployedRBAC(t *testing.T) {
	deploy := filepath.Join(repo, "deploy")
	if out, err := kubectlCmd(t.Context(), "apply", "-k", deploy); err != nil {
		t.Fatalf("kubectl apply -k deploy/: %v\n%s", err, out)
	}
	t.Cleanup(func() { _, _ = kubectlCmd(context.Background(), "delete", "-k", deploy, "--wait=false") })

	t.Run("the role is not wider than needed", func(t *testing.T) {
		for _, denied := range [][]string{
			{"get", "secrets", "-A"}, {"list", "nodes"},
			// of its own namespace's Secrets, only its certificate's (Helm's release Secrets are there)
			{"get", "secrets", "-n", "metacel-system"}, {"list", "secrets", "-n", "metacel-system"},
			{"watch", "secrets", "-n", "metacel-system"}, {"update", "secrets/sh.helm.release.v1.metacel.v1", "-n", "metacel-system"}, {"delete", "myapps.demo.rtfm.co.ua", "-A"},
			{"create", "myapps.demo.rtfm.co.ua", "-A"}, {"update", "deployments.apps", "-A"},
			{"update", "configmaps", "-A"}, {"create", "pods", "--subresource=exec", "-A"},
			{"patch", "myapps.demo.rtfm.co.ua", "--subresource=scale", "-A"},
			{"delete", "leases.coordination.k8s.io", "-A"},
			{"create", "clusterroles.rbac.authorization.k8s.io"}, {"escalate", "clusterroles.rbac.authorization.k8s.io"},
			// the policies write as their ServiceAccounts, never as the runtime
			{"create", "pods", "-A"}, {"create", "deployments.apps", "-A"}, {"delete", "pods", "-A"},
			{"create", "configmaps", "-n", "kube-system"}, {"patch", "myapps.demo.rtfm.co.ua", "-A"},
			// nor as any ServiceAccount but those of the policy namespace
			{"impersonate", "serviceaccounts", "-n", "kube-system"},
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
	t.Run("only the policy authors may write a policy", func(t *testing.T) {
		// someone who may edit the policy namespace, as the built-in role edit allows, is refused
		editor := grantEdit(t, "metacel-system", "e2e-editor")
		policy := `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"e2e-escalate","labels":{"metacel.dev/policy":"true"}},"data":{"p.yaml":"x"}}`
		out, err := kubectlAs(t, editor, nil, policy)
		if err == nil || !strings.Contains(out, "only members of the group metacel:policy-authors may write policies") {
			t.Errorf("an editor outside the policy authors wrote a policy ConfigMap: %v\n%s", err, out)
		}
		if out, err := kubectlAs(t, editor, nil, strings.Replace(policy, `"true"`, `"false"`, 1)); err != nil {
			t.Errorf("an editor may not write an unlabelled ConfigMap: %v\n%s", err, out)
		}
		if out, err := kubectlAs(t, editor, []string{"metacel:policy-authors"}, policy); err != nil {
			t.Errorf("a policy author may not write a policy ConfigMap: %v\n%s", err, out)
		}
		// deleting a policy gives no rights: left to RBAC, so an administrator outside the group
		// may uninstall (the admission policy is deleted after the policies)
		if out, err := kubectlCmd(t.Context(), "apply", "--server-side", "-n", "metacel-system", "-f", writeTemp(t, "cm.json", []byte(policy)), "--as", editor, "--as-group", "metacel:policy-authors"); err != nil {
			t.Fatalf("write the policy to delete: %v\n%s", err, out)
		}
		t.Cleanup(func() {
			_, _ = kubectlCmd(context.Background(), "delete", "configmap", "-n", "metacel-system", "e2e-escalate", "--ignore-not-found")
		})
		if out, err := kubectlCmd(t.Context(), "delete", "configmap", "-n", "metacel-system", "e2e-escalate", "--dry-run=server", "--as", editor); err != nil {
			t.Errorf("an editor may not delete a policy ConfigMap: %v\n%s", err, out)
		}
		// what the admission policy cannot stop, as docs/writing-policies.md says: edit may
		// impersonate the namespace's ServiceAccounts, the runtime's included
		if out, _ := kubectlCmd(t.Context(), "auth", "can-i", "impersonate", "serviceaccounts/metacel", "-n", "metacel-system", "--as", editor); strings.TrimSpace(out) != "yes" {
			t.Errorf("the built-in edit role may not impersonate the runtime's ServiceAccount (%s): correct docs/writing-policies.md", out)
		}
	})
}

// grantEdit binds the built-in role edit in namespace to user.
func grantEdit(t *testing.T, namespace, user string) string {
	t.Helper()
	if out, err := kubectlCmd(t.Context(), "create", "rolebinding", user, "-n", namespace, "--clusterrole=edit", "--user="+user); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	t.Cleanup(func() { _, _ = kubectlCmd(context.Background(), "delete", "rolebinding", user, "-n", namespace) })
	return user
}

// kubectlAs server-side applies a ConfigMap (JSON) in metacel-system as user, in groups (a
// dry run: it is only asked whether the write is allowed).
func kubectlAs(t *testing.T, user string, groups []string, configMap string) (string, error) {
	t.Helper()
	args := []string{"apply", "--server-side", "--dry-run=server", "-n", "metacel-system", "-f", writeTemp(t, "cm.json", []byte(configMap)), "--as", user}
	for _, g := range groups {
		args = append(args, "--as-group", g)
	}
	return kubectlCmd(t.Context(), args...)
}
