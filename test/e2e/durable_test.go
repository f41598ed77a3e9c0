//go:build e2e

package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"metacel.dev/metacel/runtime/contract"
	"metacel.dev/metacel/runtime/ledger"
)

// durablePolicy serves the Widgets labelled durable=<name> with a ConfigMap and a Secret.
func durablePolicy(name string) string {
	return fmt.Sprintf(`apiVersion: metacel.dev/v1alpha1
kind: CompositePolicy
metadata: {name: %[1]s}
spec:
  parentResource:
    apiVersion: e2e.metacel.dev/v1
    resource: widgets
    labelSelector: {matchLabels: {durable: %[1]s}}
  childResources:
    - {apiVersion: v1, resource: configmaps}
    - {apiVersion: v1, resource: secrets}
  children:
    - id: config
      template: {apiVersion: v1, kind: ConfigMap, metadata: {name: "${parent.metadata.name}-config"}}
    - id: secret
      template: {apiVersion: v1, kind: Secret, metadata: {name: "${parent.metadata.name}-secret"}}
`, name)
}

// durablePolicyV2 is durablePolicy without its Secret: the entry and the resource.
func durablePolicyV2(name string) string {
	v1 := durablePolicy(name)
	head, _, _ := strings.Cut(v1, "    - id: secret")
	return strings.Replace(head, "    - {apiVersion: v1, resource: secrets}\n", "", 1)
}

// TestADroppedChildResourceIsCleanedUpAfterAKill9 runs `metacel run` as a Pod would (its
// namespace in POD_NAMESPACE, from the downward API) in every supported combination of policy
// source and leader election: a policy's children converge, the runtime is killed (SIGKILL), the
// policy drops a child resource meanwhile, and the runtime started again deletes that resource's
// children. Only the ledger, kept in the API server, can tell it that the resource was listed.
func TestADroppedChildResourceIsCleanedUpAfterAKill9(t *testing.T) {
	bin := buildMetacel(t)
	// short timings: the restarted replica takes over the dead one's Lease within seconds
	election := []string{"--leader-elect", "--leader-election-lease-duration=3s",
		"--leader-election-renew-deadline=2s", "--leader-election-retry-period=500ms"}
	tests := []struct {
		name           string
		fromDir        bool
		leaderElection bool
	}{
		{name: "policies from ConfigMaps"},
		{name: "policies from ConfigMaps, leader election", leaderElection: true},
		{name: "policies from a directory only", fromDir: true},
		{name: "policies from a directory only, leader election", fromDir: true, leaderElection: true},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			policy := fmt.Sprintf("durable-%d", i)
			own, ns := newNamespace(t, "durable-own"), newNamespace(t, "durable")
			args := []string{"run", "--allow-policies-without-service-account", "--kubeconfig", cluster.kubeconfig, "--metrics-bind-address=0", "--health-probe-bind-address=0", "--v=2"}
			var setPolicy func(text string)
			records := own // where the ledger is: the policy namespace, else the runtime's own
			if tt.fromDir {
				dir := t.TempDir()
				setPolicy = func(text string) {
					t.Helper()
					if err := os.WriteFile(filepath.Join(dir, policy+".yaml"), []byte(text), 0o644); err != nil {
						t.Fatal(err)
					}
				}
				args = append(args, "--policy-dir", dir, "--policy-namespace=")
			} else {
				policyNS := newNamespace(t, "durable-policies")
				setPolicy = func(text string) {
					t.Helper()
					applyConfigMap(t, &corev1.ConfigMap{
						ObjectMeta: metav1.ObjectMeta{Name: policy, Namespace: policyNS, Labels: map[string]string{"metacel.dev/policy": "true"}},
						Data:       map[string]string{policy + ".yaml": text},
					})
				}
				args = append(args, "--policy-namespace", policyNS)
				records = policyNS
			}
			if tt.leaderElection {
				args = append(args, election...)
			}
			env := []string{"POD_NAMESPACE=" + own}

			setPolicy(durablePolicy(policy))
			rt := startProcessWithEnv(t, bin, env, args...)
			w := widget(ns, "w")
			w.SetLabels(map[string]string{"durable": policy})
			create(t, widgetsGVR, w)
			waitFor(t, configMapsGVR, ns, "w-config", wait, exists)
			waitFor(t, secretsGVR, ns, "w-secret", wait, exists)

			rt.kill9()
			setPolicy(durablePolicyV2(policy))
			startProcessWithEnv(t, bin, env, args...)
			waitGone(t, secretsGVR, ns, "w-secret", wait)
			consistently(t, time.Second, "the child of a resource still listed stays", func() error {
				_, err := get(t, configMapsGVR, ns, "w-config")
				return err
			})
			waitLedger(t, records, policy, "/v1/configmaps")
		})
	}
}

// waitLedger waits until the ledger in ns records exactly resources (formatted as the ledger
// writes them) for a policy.
func waitLedger(t *testing.T, ns, policy, resources string) {
	t.Helper()
	eventually(t, wait, fmt.Sprintf("the ledger of %q in %s at %s", policy, ns, resources), func() error {
		lease, err := cluster.kube.CoordinationV1().Leases(ns).Get(t.Context(), ledger.LeaseName(policy), metav1.GetOptions{})
		if err != nil {
			return err
		}
		if got := lease.Annotations[contract.AnnotationChildResources]; got != resources {
			return fmt.Errorf("ledger %q", got)
		}
		return nil
	})
}
