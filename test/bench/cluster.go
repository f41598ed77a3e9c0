//go:build e2e

package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/yaml"
)

var (
	myAppsGVR = schema.GroupVersionResource{Group: "demo.rtfm.co.ua", Version: "v1", Resource: "myapps"}
	crdsGVR   = schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}
	podsGVR   = schema.GroupVersionResource{Version: "v1", Resource: "pods"}
)

const (
	// benchNamespace holds the parents and their Pods.
	benchNamespace = "bench"
	// policyNamespace is `metacel run`'s default --policy-namespace: it watches ConfigMaps there
	// and keeps its ledger Lease there.
	policyNamespace = "metacel-system"
)

// auditPolicy logs only the API server's own requests (its loopback client: bootstrap, lease
// renewals), so that they can be taken out of apiserver_request_total like the load client's.
const auditPolicy = `apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: [RequestReceived, ResponseStarted]
rules:
  - level: Metadata
    users: ["system:apiserver"]
  - level: None
`

// cluster is a fresh etcd and kube-apiserver, and nothing else: no controller-manager (no
// garbage collector, no other writer), no scheduler, no nodes.
type cluster struct {
	script, dir string
	config      *rest.Config // admin, unthrottled, counted by the bench's counter
	kube        kubernetes.Interface
	dynamic     dynamic.Interface
	audit       string
}

// startCluster starts a control plane in dir; env adds variables of hack/control-plane.sh (e.g.
// METACEL_FEATURE_GATES).
func startCluster(ctx context.Context, repo, dir string, bench *counter, env ...string) (*cluster, error) {
	c := &cluster{script: filepath.Join(repo, "hack", "control-plane.sh"), dir: dir, audit: filepath.Join(dir, "logs", "audit.log")}
	policy := filepath.Join(dir, "audit-policy.yaml")
	if err := os.WriteFile(policy, []byte(auditPolicy), 0o600); err != nil {
		return nil, err
	}
	// a port taken between the script's choice and etcd's bind fails `up`: start afresh
	for attempt := 1; ; attempt++ {
		up := exec.CommandContext(ctx, c.script, "up", dir)
		up.Env = append(append(os.Environ(), "METACEL_COMPONENTS=etcd kube-apiserver", "METACEL_AUDIT_POLICY="+policy), env...)
		var out bytes.Buffer
		up.Stdout, up.Stderr = &out, &out
		err := up.Run()
		if err == nil {
			break
		}
		c.stop()
		if attempt == 3 || ctx.Err() != nil {
			return nil, fmt.Errorf("%s up %s: %w\n%s", c.script, dir, err, out.String())
		}
		logf("  control plane did not start (attempt %d): %v; again with new ports", attempt, err)
		if err := resetDir(dir, policy); err != nil {
			return nil, err
		}
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", filepath.Join(dir, "kubeconfig"))
	if err != nil {
		c.stop()
		return nil, err
	}
	cfg.QPS, cfg.Burst, cfg.UserAgent = -1, 0, "metacel-bench"
	cfg.Wrap(bench.wrap)
	c.config = cfg
	if c.kube, err = kubernetes.NewForConfig(cfg); err != nil {
		c.stop()
		return nil, err
	}
	if c.dynamic, err = dynamic.NewForConfig(cfg); err != nil {
		c.stop()
		return nil, err
	}
	return c, nil
}

// resetDir empties a run directory but for the audit policy (the ports and etcd data of a
// failed start go with it).
func resetDir(dir, policy string) error {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	for _, e := range entries {
		if p := filepath.Join(dir, e.Name()); p != policy {
			if err := os.RemoveAll(p); err != nil {
				return err
			}
		}
	}
	return nil
}

func (c *cluster) stop() {
	down := exec.Command(c.script, "down", c.dir)
	_ = down.Run()
}

func (c *cluster) kubeconfig() string { return filepath.Join(c.dir, "kubeconfig") }

// metrics scrapes apiserver_request_total (the API server does not count its /metrics).
func (c *cluster) metrics(ctx context.Context) (counts, error) {
	raw, err := c.kube.Discovery().RESTClient().Get().AbsPath("/metrics").DoRaw(ctx)
	if err != nil {
		return nil, fmt.Errorf("scrape the API server's /metrics: %w", err)
	}
	return parseRequestTotal(bytes.NewReader(raw))
}

// serverVersion is the API server's git version.
func (c *cluster) serverVersion() string {
	v, err := c.kube.Discovery().ServerVersion()
	if err != nil {
		return "?"
	}
	return v.GitVersion
}

// setup installs the MyApp CRD (crds/myapp.yaml with status.podName), the namespaces and the
// default ServiceAccount that Pods need (no controller-manager makes it), and waits until
// MyApps are served.
func (c *cluster) setup(ctx context.Context, repo string) error {
	raw, err := os.ReadFile(filepath.Join(repo, "crds", "myapp.yaml"))
	if err != nil {
		return err
	}
	crd := &unstructured.Unstructured{}
	if err := yaml.Unmarshal(raw, &crd.Object); err != nil {
		return fmt.Errorf("crds/myapp.yaml: %w", err)
	}
	versions, _, _ := unstructured.NestedSlice(crd.Object, "spec", "versions")
	for i, v := range versions {
		podName := map[string]any{"type": "string", "maxLength": int64(253), "description": "Name of the MyApp's Pod (benchmark)."}
		if err := unstructured.SetNestedField(v.(map[string]any), podName, "schema", "openAPIV3Schema", "properties", "status", "properties", "podName"); err != nil {
			return err
		}
		versions[i] = v
	}
	if err := unstructured.SetNestedSlice(crd.Object, versions, "spec", "versions"); err != nil {
		return err
	}
	if _, err := c.dynamic.Resource(crdsGVR).Create(ctx, crd, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("create the MyApp CRD: %w", err)
	}
	for _, ns := range []string{benchNamespace, policyNamespace} {
		if _, err := c.kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
			return err
		}
	}
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "default", Namespace: benchNamespace}}
	if _, err := c.kube.CoreV1().ServiceAccounts(benchNamespace).Create(ctx, sa, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return err
	}
	deadline := time.Now().Add(60 * time.Second)
	for {
		_, err := c.dynamic.Resource(myAppsGVR).Namespace(benchNamespace).List(ctx, metav1.ListOptions{Limit: 1})
		if err == nil {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("MyApps not served after 60s: %w", err)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// sample is samples/myapp.yaml's MyApp.
func sample(repo string) (*unstructured.Unstructured, error) {
	raw, err := os.ReadFile(filepath.Join(repo, "samples", "myapp.yaml"))
	if err != nil {
		return nil, err
	}
	u := &unstructured.Unstructured{}
	if err := yaml.Unmarshal(raw, &u.Object); err != nil {
		return nil, fmt.Errorf("samples/myapp.yaml: %w", err)
	}
	return u, nil
}

// serverCPU is the CPU seconds (user and system) that kube-apiserver and etcd have spent so far:
// what a controller's requests cost the control plane, beside what they cost the controller.
func (c *cluster) serverCPU() float64 {
	var sum float64
	for _, name := range []string{"kube-apiserver", "etcd"} {
		b, err := os.ReadFile(filepath.Join(c.dir, "run", name+".pid"))
		if err != nil {
			continue
		}
		if pid, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil {
			sum += readProc(pid).CPU
		}
	}
	return sum
}
