//go:build e2e

package e2e

import (
	"fmt"
	"regexp"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"metacel.dev/metacel/runtime/contract"
	"metacel.dev/metacel/runtime/operator"
	"metacel.dev/metacel/runtime/policystatus"
)

// statusColumns are the labels `kubectl get configmaps -L` shows of a policy's status.
var statusColumns = []string{
	contract.LabelPolicyState, contract.LabelPolicyVersion, contract.LabelPolicyParents,
	contract.LabelPolicyReady, contract.LabelPolicyFailing, contract.LabelPolicyRollout,
}

// kubectlStatus returns the status columns of a policy ConfigMap as kubectl prints them, by
// column name.
func kubectlStatus(t *testing.T, ns, name string) (map[string]string, error) {
	out, err := kubectlCmd(t.Context(), "get", "configmap", name, "-n", ns, "-L", strings.Join(statusColumns, ","))
	if err != nil {
		return nil, fmt.Errorf("kubectl: %w: %s", err, out)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 2 {
		return nil, fmt.Errorf("kubectl printed %q", out)
	}
	head, row := strings.Fields(lines[0]), strings.Fields(lines[1])
	cols := map[string]string{}
	for i, h := range head {
		if i < len(row) {
			cols[h] = row[i]
		}
	}
	return cols, nil
}

// waitStatus waits until a policy ConfigMap's labels and annotations satisfy check.
func waitStatus(t *testing.T, ns, name, what string, check func(cm *corev1.ConfigMap) error) *corev1.ConfigMap {
	t.Helper()
	var cm *corev1.ConfigMap
	eventually(t, wait, what, func() error {
		var err error
		if cm, err = cluster.kube.CoreV1().ConfigMaps(ns).Get(t.Context(), name, metav1.GetOptions{}); err != nil {
			return err
		}
		return check(cm)
	})
	return cm
}

// inState checks a policy ConfigMap's state label, and that its last error holds lastError.
func inState(state policystatus.State, lastError string) func(*corev1.ConfigMap) error {
	return func(cm *corev1.ConfigMap) error {
		if got := cm.Labels[contract.LabelPolicyState]; got != string(state) {
			return fmt.Errorf("state %q, labels %v", got, cm.Labels)
		}
		if got := cm.Annotations[contract.AnnotationPolicyLastError]; !strings.Contains(got, lastError) {
			return fmt.Errorf("last error %q, want %q in it", got, lastError)
		}
		return nil
	}
}

// TestPolicyStatusOnItsConfigMap reads each policy's state where an operator looks:
// `kubectl get configmaps -L`. Running with its parents counted, Invalid (the last good version
// running on), Waiting for a CRD; the status writes never reload a policy.
func TestPolicyStatusOnItsConfigMap(t *testing.T) {
	policyNS, ns := newNamespace(t, "status-policies"), newNamespace(t, "status")
	gens := &generations{}
	startRuntimeWith(t, operator.Options{PolicyNamespace: policyNS, OnReload: gens.set})
	cm := policyConfigMap(t, "myapp", policyNS)
	applyConfigMap(t, cm)
	gens.waitFor(t, "myapp", 1)
	for i := range 3 {
		app := sample(t, "myapp", ns)
		app.SetName(fmt.Sprintf("app-%d", i))
		create(t, myAppsGVR, app)
	}

	t.Run("Running, with its parents counted, in kubectl get -L", func(t *testing.T) {
		eventually(t, wait, "kubectl shows the policy Running with 3 ready parents", func() error {
			cols, err := kubectlStatus(t, policyNS, cm.Name)
			if err != nil {
				return err
			}
			want := map[string]string{"STATE": "Running", "PARENTS": "3", "READY": "3", "FAILING": "0"}
			for k, v := range want {
				if cols[k] != v {
					return fmt.Errorf("%s is %q, want %q: %v; in the cluster: %s", k, cols[k], v, cols, parentsAndPods(t, ns, 3))
				}
			}
			if !regexp.MustCompile(`^[0-9a-f]{12}$`).MatchString(cols["VERSION"]) {
				return fmt.Errorf("VERSION %q", cols["VERSION"])
			}
			return nil
		})
	})

	t.Run("Invalid, while the last good version runs on", func(t *testing.T) {
		good := waitStatus(t, policyNS, cm.Name, "Running", inState(policystatus.Running, ""))
		applyConfigMap(t, withPolicy(cm, func(p string) string { return strings.Replace(p, "parent.spec.image", "parent.spec.imag", 1) }))
		bad := waitStatus(t, policyNS, cm.Name, "Invalid", inState(policystatus.Invalid, "imag"))
		expectEqual(t, "the version of the version that runs on", bad.Labels[contract.LabelPolicyVersion], good.Labels[contract.LabelPolicyVersion])
		expectEqual(t, "parents still counted", bad.Labels[contract.LabelPolicyParents], "3")
		applyConfigMap(t, cm)
		waitStatus(t, policyNS, cm.Name, "Running again", inState(policystatus.Running, ""))
	})

	t.Run("Waiting for a CRD", func(t *testing.T) {
		waiting := &corev1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{Name: "policy-gizmo", Namespace: policyNS, Labels: map[string]string{"metacel.dev/policy": "true"}},
			Data: map[string]string{"gizmo.yaml": `apiVersion: metacel.dev/v1alpha1
kind: CompositePolicy
metadata:
  name: gizmo
spec:
  parentResource:
    apiVersion: nowhere.example.com/v1
    resource: gizmos
`},
		}
		applyConfigMap(t, waiting)
		waitStatus(t, policyNS, waiting.Name, "Waiting", inState(policystatus.Waiting, "gizmos"))
	})

	t.Run("a status write never reloads a policy", func(t *testing.T) {
		expectEqual(t, "myapp's generation after its status changed five times", gens.of("myapp"), 1)
	})
}

// parentsAndPods says, for the status test's MyApps app-0..app-<n-1>, each one's Ready condition
// and its Pod's phase as the API server has them: what a count that falls short is to be read
// against.
func parentsAndPods(t *testing.T, ns string, n int) string {
	var out []string
	for i := range n {
		name := fmt.Sprintf("app-%d", i)
		ready, phase := "no MyApp", "no Pod"
		if app, err := get(t, myAppsGVR, ns, name); err == nil {
			ready = "no Ready condition"
			if m := condition(app, "Ready"); m != nil {
				ready = fmt.Sprintf("Ready %v (%v)", m["status"], m["message"])
			}
		}
		if pod, err := get(t, podsGVR, ns, name+"-pod"); err == nil {
			phase, _, _ = unstructured.NestedString(pod.Object, "status", "phase")
			phase = "Pod " + phase
		}
		out = append(out, fmt.Sprintf("%s: %s, %s", name, ready, phase))
	}
	return strings.Join(out, "; ")
}
