//go:build e2e

package e2e

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"metacel.dev/metacel/runtime/contract"
	"metacel.dev/metacel/runtime/ledger"
)

// killedPolicy serves the Widgets labelled kill9=in: a ConfigMap in the namespace their color
// names (cross-namespace: the cleanup finalizer), one they keep (Orphan), and a Secret.
const killedPolicy = `apiVersion: metacel.dev/v1alpha1
kind: CompositePolicy
metadata: {name: killed}
spec:
  parentResource:
    apiVersion: e2e.metacel.dev/v1
    resource: widgets
    labelSelector: {matchLabels: {kill9: in}}
  confinement: {childNamespaces: {names: ["*"]}}
  childResources:
    - {apiVersion: v1, resource: configmaps}
    - {apiVersion: v1, resource: secrets}
  children:
    - id: far
      crossNamespace: true
      template: {apiVersion: v1, kind: ConfigMap, metadata: {name: "${parent.metadata.name}-far", namespace: "${parent.spec.color}"}}
    - id: kept
      deletionPolicy: Orphan
      template: {apiVersion: v1, kind: ConfigMap, metadata: {name: "${parent.metadata.name}-kept"}}
    - id: extra
      template: {apiVersion: v1, kind: ConfigMap, metadata: {name: "${parent.metadata.name}-extra"}}
    - id: secret
      template: {apiVersion: v1, kind: Secret, metadata: {name: "${parent.metadata.name}-secret"}}
`

// killedPolicyV2 drops the Orphan entry, an entry whose resource stays, and the Secret entry with
// its resource.
var killedPolicyV2 = func() string {
	head, _, _ := strings.Cut(killedPolicy, "    - id: kept")
	return strings.Replace(head, "    - {apiVersion: v1, resource: secrets}\n", "", 1)
}()

// TestCleanupSurvivesKill9: the runtime is killed (SIGKILL) while a cleanup is due or under way;
// the next one finishes it: a dropped resource's child and a dropped entry's deleted, a dropped
// Orphan entry's child released, a parent that left the selector (by its labels, or by a new
// selector) let go of.
func TestCleanupSurvivesKill9(t *testing.T) {
	bin := buildMetacel(t)
	policyNS, ns, far := newNamespace(t, "kill9-policies"), newNamespace(t, "kill9"), newNamespace(t, "kill9-far")
	setPolicy := func(text string) {
		t.Helper()
		applyConfigMap(t, &corev1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{Name: "killed", Namespace: policyNS, Labels: map[string]string{"metacel.dev/policy": "true"}},
			Data:       map[string]string{"killed.yaml": text},
		})
	}
	setPolicy(killedPolicy)
	outer := t // the processes live as long as the whole test, not the subtest that starts them
	rt := startProcess(t, bin, "run", "--allow-policies-without-service-account", "--kubeconfig", cluster.kubeconfig, "--policy-namespace", policyNS,
		"--metrics-bind-address=0", "--health-probe-bind-address=0", "--v=2")
	w := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "e2e.metacel.dev/v1", "kind": "Widget",
		"metadata": map[string]any{"name": "w", "namespace": ns, "labels": map[string]any{"kill9": "in"}},
		"spec":     map[string]any{"color": far},
	}}
	create(t, widgetsGVR, w)
	waitFor(t, widgetsGVR, ns, "w", wait, hasFinalizer(true))
	waitFor(t, configMapsGVR, far, "w-far", wait, exists)
	waitFor(t, configMapsGVR, ns, "w-kept", wait, exists)
	waitFor(t, secretsGVR, ns, "w-secret", wait, exists)
	waitFor(t, configMapsGVR, ns, "w-extra", wait, exists)

	t.Run("killed as a new version drops an Orphan entry and a resource", func(t *testing.T) {
		setPolicy(killedPolicyV2)
		rt.kill9() // at once: the cleanup is due, or under way
		rt = startProcess(outer, bin, rt.args...)
		waitGone(t, secretsGVR, ns, "w-secret", wait)
		waitGone(t, configMapsGVR, ns, "w-extra", wait)
		waitFor(t, configMapsGVR, ns, "w-kept", wait, func(cm *unstructured.Unstructured) error {
			if l := cm.GetLabels()["metacel.dev/policy"]; l != "" || len(cm.GetOwnerReferences()) > 0 {
				return fmt.Errorf("not released: label %q, ownerReferences %v", l, cm.GetOwnerReferences())
			}
			return nil
		})
		eventually(t, wait, "the ledger narrowed to configmaps", func() error {
			lease, err := cluster.kube.CoordinationV1().Leases(policyNS).Get(t.Context(), ledger.LeaseName("killed"), metav1.GetOptions{})
			if err != nil {
				return err
			}
			if got := lease.Annotations[contract.AnnotationChildResources]; got != "/v1/configmaps" {
				return fmt.Errorf("ledger %q", got)
			}
			return nil
		})
	})
	t.Run("killed, then the parent leaves the selector", func(t *testing.T) {
		rt.kill9()
		patch(t, widgetsGVR, ns, "w", `{"metadata":{"labels":{"kill9":"out"}}}`)
		rt = startProcess(outer, bin, rt.args...)
		waitFor(t, widgetsGVR, ns, "w", wait, hasFinalizer(false))
		waitFor(t, configMapsGVR, far, "w-far", wait, exists) // let go of: its children stay
	})
	t.Run("killed, then the selector changes", func(t *testing.T) {
		patch(t, widgetsGVR, ns, "w", `{"metadata":{"labels":{"kill9":"in"}}}`)
		waitFor(t, widgetsGVR, ns, "w", wait, hasFinalizer(true))
		rt.kill9()
		setPolicy(strings.Replace(killedPolicyV2, "kill9: in", "kill9: other", 1))
		rt = startProcess(outer, bin, rt.args...)
		waitFor(t, widgetsGVR, ns, "w", wait, hasFinalizer(false))
		deleteObj(t, widgetsGVR, ns, "w")
		waitGone(t, widgetsGVR, ns, "w", wait) // its deletion does not hang
	})
}

var secretsGVR = configMapsGVR.GroupVersion().WithResource("secrets")

func exists(*unstructured.Unstructured) error { return nil }

// process is a metacel process that a test can kill; it is stopped when the test ends.
type process struct {
	t    *testing.T
	args []string
	// env is added to the test's environment (KEY=value)
	env    []string
	cmd    *exec.Cmd
	log    string
	exited chan struct{}
}

func startProcess(t *testing.T, bin string, args ...string) *process {
	t.Helper()
	return startProcessWithEnv(t, bin, nil, args...)
}

// startProcessWithEnv starts the process with env (KEY=value) added to the test's environment.
func startProcessWithEnv(t *testing.T, bin string, env []string, args ...string) *process {
	t.Helper()
	log, err := os.CreateTemp(t.TempDir(), "metacel-*.log")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = log.Close() }()
	p := &process{t: t, args: args, env: env, cmd: exec.Command(bin, args...), log: log.Name(), exited: make(chan struct{})}
	p.cmd.Stdout, p.cmd.Stderr = log, log
	if len(env) > 0 {
		p.cmd.Env = append(os.Environ(), env...)
	}
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		_ = p.cmd.Wait()
		close(p.exited)
	}()
	t.Cleanup(func() {
		p.kill9()
		if t.Failed() {
			out, _ := os.ReadFile(p.log)
			t.Logf("metacel %s:\n%s", filepath.Base(p.log), tail(string(out), 60))
		}
	})
	return p
}

// kill9 kills the process (SIGKILL: no cleanup of any kind) and waits until it is gone.
func (p *process) kill9() {
	select {
	case <-p.exited:
		return
	default:
	}
	_ = p.cmd.Process.Signal(syscall.SIGKILL)
	<-p.exited
}

// stop stops the process as Kubernetes stops a Pod: SIGTERM, then SIGKILL after 30 s (which
// fails the test: metacel must stop on SIGTERM).
func (p *process) stop() {
	select {
	case <-p.exited:
		return
	default:
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.exited:
	case <-time.After(30 * time.Second):
		p.t.Errorf("metacel %s did not stop in 30 s of SIGTERM", filepath.Base(p.log))
		p.kill9()
	}
}

func tail(s string, lines int) string {
	l := strings.Split(s, "\n")
	if len(l) > lines {
		l = l[len(l)-lines:]
	}
	return strings.Join(l, "\n")
}
