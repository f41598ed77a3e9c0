//go:build e2e

package e2e

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

// cluster is the control plane shared by every test of the package.
var cluster struct {
	dir, bin, kubeconfig string
	config               *rest.Config
	dynamic              dynamic.Interface
	kube                 kubernetes.Interface
}

var repo = filepath.Join("..", "..")

// podWritesAudit makes the shared API server log every Pod create and delete (whatever its
// answer), with who sent it and the answer, and of a delete the Pod it answers with (its UID), to
// sharedAuditLog(): a test counts what the API server received, kwok's deletions beside the
// runtime's.
const podWritesAudit = `apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: [RequestReceived, ResponseStarted]
rules:
  - level: RequestResponse
    verbs: [delete]
    resources: [{group: "", resources: [pods]}]
  - level: Metadata
    verbs: [create]
    resources: [{group: "", resources: [pods]}]
  - level: None
`

// sharedAuditLog is the shared API server's audit log (podWritesAudit).
func sharedAuditLog() string { return filepath.Join(cluster.dir, "logs", "audit.log") }

func TestMain(m *testing.M) {
	flag.Parse()
	code, err := run(m)
	if err != nil {
		fmt.Fprintln(os.Stderr, "e2e:", err)
		os.Exit(1)
	}
	os.Exit(code)
}

func run(m *testing.M) (int, error) {
	script := filepath.Join(repo, "hack", "control-plane.sh")
	out, err := exec.Command(script, "bin-dir").Output()
	if err != nil {
		return 0, fmt.Errorf("build the control plane (%s bin-dir): %w", script, err)
	}
	cluster.bin = strings.TrimSpace(string(out))
	cluster.dir, err = os.MkdirTemp("", "metacel-e2e-")
	if err != nil {
		return 0, err
	}
	defer func() { _ = os.RemoveAll(cluster.dir) }()
	if metacelBuild.dir, err = os.MkdirTemp("", "metacel-e2e-bin-"); err != nil {
		return 0, err
	}
	defer func() { _ = os.RemoveAll(metacelBuild.dir) }()
	audit := filepath.Join(cluster.dir, "audit-policy.yaml")
	if err := os.WriteFile(audit, []byte(podWritesAudit), 0o600); err != nil {
		return 0, err
	}
	up := exec.Command(script, "up", cluster.dir)
	up.Env = append(os.Environ(), "METACEL_AUDIT_POLICY="+audit)
	up.Stderr = os.Stderr
	if err := up.Run(); err != nil {
		return 0, fmt.Errorf("start the control plane: %w", err)
	}
	defer func() {
		down := downAtOnce(script, cluster.dir)
		down.Stderr = os.Stderr
		_ = down.Run()
	}()
	cluster.kubeconfig = filepath.Join(cluster.dir, "kubeconfig")
	if cluster.config, err = clientcmd.BuildConfigFromFlags("", cluster.kubeconfig); err != nil {
		return 0, err
	}
	cluster.config.QPS, cluster.config.Burst = 200, 400
	if cluster.dynamic, err = dynamic.NewForConfig(cluster.config); err != nil {
		return 0, err
	}
	if cluster.kube, err = kubernetes.NewForConfig(cluster.config); err != nil {
		return 0, err
	}
	if err := installCRDs(); err != nil {
		return 0, err
	}
	return m.Run(), nil
}

// downAtOnce is `control-plane.sh down dir` killing each component right after SIGTERM: the
// directory, the cluster's state, is removed next, and a graceful stop took 5 s (an API server
// of the test's own) to 7 s (a whole control plane), a minute of the suite over its dozen.
func downAtOnce(script, dir string) *exec.Cmd {
	down := exec.Command(script, "down", dir)
	down.Env = append(os.Environ(), "METACEL_DOWN_TIMEOUT=0")
	return down
}

// installCRDs installs the seed CRDs and the test-only ones, and waits until they are served.
func installCRDs() error {
	dirs := []string{filepath.Join(repo, "crds"), filepath.Join(repo, "test", "testdata", "crds"), filepath.Join("testdata", "crds")}
	args := []string{"apply"}
	for _, d := range dirs {
		args = append(args, "-f", d)
	}
	if out, err := kubectlCmd(context.Background(), args...); err != nil {
		return fmt.Errorf("install CRDs: %w: %s", err, out)
	}
	// kubectl wait fails at once on a CRD whose status has no conditions yet: ask again until the
	// deadline
	deadline := time.Now().Add(60 * time.Second)
	for {
		out, err := kubectlCmd(context.Background(), "wait", "--for=condition=Established", "crd", "--all", "--timeout=60s")
		if err == nil {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("wait for CRDs: %w: %s", err, out)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// kubectlCmd runs the control plane's kubectl.
func kubectlCmd(ctx context.Context, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, filepath.Join(cluster.bin, "kubectl"), append([]string{"--kubeconfig", cluster.kubeconfig}, args...)...)
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// eventually polls check every 100ms until it returns nil, or fails the test with its last
// error after timeout. A wait of slowWait or more is logged with its length (go test -v).
func eventually(t testing.TB, timeout time.Duration, what string, check func() error) {
	t.Helper()
	start := time.Now()
	deadline := start.Add(timeout)
	for {
		err := check()
		if err == nil {
			if took := time.Since(start); took >= slowWait {
				t.Logf("%s: after %s", what, took.Round(100*time.Millisecond)) // where a slow test's time goes (go test -v)
			}
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: not true after %s: %v", what, timeout, err)
		}
		select {
		case <-t.Context().Done():
			t.Fatalf("%s: %v", what, t.Context().Err())
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// slowWait is the length from which eventually logs a wait.
const slowWait = 2 * time.Second
