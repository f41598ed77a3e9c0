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
	"k8s.io/client-go/util/retry"
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

// The users of the control plane's own clients (hack/control-plane.sh's certificates): the API
// server's loopback client, and on a control plane with nodes the scheduler and kwok.
const (
	apiserverUser = "system:apiserver"
	schedulerUser = "system:kube-scheduler"
	kwokUser      = "kwok"
)

// auditPolicy logs only the requests of the control plane's own clients (the API server's:
// bootstrap, lease renewals; the scheduler's bindings and events; kwok's Pod status, deletions
// and node leases), so that they can be taken out of apiserver_request_total like the load
// client's.
const auditPolicy = `apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: [RequestReceived, ResponseStarted]
rules:
  - level: Metadata
    users: ["` + apiserverUser + `", "` + schedulerUser + `", "` + kwokUser + `"]
  - level: None
`

// benchNodes are the kwok nodes of a control plane with nodes (-configs nodes). One is enough:
// kwok's node takes any number of Pods (its capacity is a million), and the scheduler binds
// Pods one at a time whatever the nodes.
var benchNodes = []string{"bench-node-0"}

// controlPlaneEnv tells hack/control-plane.sh what to start: etcd and kube-apiserver alone, or
// with nodes also kube-scheduler and kwok with those nodes, so that Pods are bound and Running and
// a deletion is graceful. Never kube-controller-manager: no garbage collector, no other writer of
// the bench's objects.
func controlPlaneEnv(nodes []string) []string {
	if len(nodes) == 0 {
		return []string{"METACEL_COMPONENTS=etcd kube-apiserver"}
	}
	return []string{"METACEL_COMPONENTS=etcd kube-apiserver kube-scheduler kwok", "METACEL_KWOK_NODES=" + strings.Join(nodes, " ")}
}

// cluster is a fresh etcd and kube-apiserver, and nothing else: no controller-manager (no
// garbage collector, no other writer); with nodes also kube-scheduler and kwok.
type cluster struct {
	script, dir string
	config      *rest.Config // admin, unthrottled, counted by the bench's counter
	kube        kubernetes.Interface
	dynamic     dynamic.Interface
	audit       string
	nodes       []string // kwok's nodes (kube-scheduler and kwok run), or none
}

// startCluster starts a control plane in dir, with kube-scheduler and kwok when nodes are given;
// env adds variables of hack/control-plane.sh (e.g. METACEL_FEATURE_GATES).
func startCluster(ctx context.Context, repo, dir string, bench *counter, nodes []string, env ...string) (*cluster, error) {
	c := &cluster{script: filepath.Join(repo, "hack", "control-plane.sh"), dir: dir, audit: filepath.Join(dir, "logs", "audit.log"), nodes: nodes}
	policy := filepath.Join(dir, "audit-policy.yaml")
	if err := os.WriteFile(policy, []byte(auditPolicy), 0o600); err != nil {
		return nil, err
	}
	// a port taken between the script's choice and etcd's bind fails `up`: start afresh
	for attempt := 1; ; attempt++ {
		up := exec.CommandContext(ctx, c.script, "up", dir)
		up.Env = append(append(append(os.Environ(), controlPlaneEnv(nodes)...), "METACEL_AUDIT_POLICY="+policy), env...)
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

// cacheChecks is how many consistency checks of its watch cache the API server has run
// (apiserver_storage_consistency_checks_total, every resource's): every 5 minutes, with the
// DetectCacheInconsistency gate (on since Kubernetes 1.34), it lists every object of each cached
// resource from etcd, which at 100,000 parents takes both cores about half a minute. A window that
// holds one measures the API server's check as much as the controller. 0 when unknown.
func (c *cluster) cacheChecks(ctx context.Context) float64 {
	raw, err := c.kube.Discovery().RESTClient().Get().AbsPath("/metrics").DoRaw(ctx)
	if err != nil {
		return 0
	}
	n, _ := sumSamples(string(raw), "apiserver_storage_consistency_checks_total", nil)
	return n
}

// serverVersion is the API server's git version.
func (c *cluster) serverVersion() string {
	v, err := c.kube.Discovery().ServerVersion()
	if err != nil {
		return "?"
	}
	return v.GitVersion
}

// setup installs the job's CRD (crds/; the MyApp's with status.podName), the namespaces and the
// default ServiceAccount that Pods need (no controller-manager makes it), and waits until the
// job's parents are served.
func (c *cluster) setup(ctx context.Context, repo string, j *job) error {
	crd, err := jobCRD(repo, j)
	if err != nil {
		return err
	}
	if _, err := c.dynamic.Resource(crdsGVR).Create(ctx, crd, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("create the %s CRD: %w", j.kind, err)
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
	if len(c.nodes) > 0 {
		if err := c.untaintNodes(ctx); err != nil {
			return err
		}
		if err := c.requireKwokGuard(ctx); err != nil {
			return err
		}
	}
	deadline := time.Now().Add(60 * time.Second)
	for {
		_, err := c.dynamic.Resource(j.parent).Namespace(benchNamespace).List(ctx, metav1.ListOptions{Limit: 1})
		if err == nil {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%ss not served after 60s: %w", j.kind, err)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// jobCRD is crds/<j.file>, and for MyApp with status.podName.
func jobCRD(repo string, j *job) (*unstructured.Unstructured, error) {
	raw, err := os.ReadFile(filepath.Join(repo, "crds", j.file))
	if err != nil {
		return nil, err
	}
	crd := &unstructured.Unstructured{}
	if err := yaml.Unmarshal(raw, &crd.Object); err != nil {
		return nil, fmt.Errorf("crds/%s: %w", j.file, err)
	}
	if !j.podName {
		return crd, nil
	}
	versions, _, _ := unstructured.NestedSlice(crd.Object, "spec", "versions")
	for i, v := range versions {
		podName := map[string]any{"type": "string", "maxLength": int64(253), "description": "Name of the MyApp's Pod (benchmark)."}
		if err := unstructured.SetNestedField(v.(map[string]any), podName, "schema", "openAPIV3Schema", "properties", "status", "properties", "podName"); err != nil {
			return nil, err
		}
		versions[i] = v
	}
	return crd, unstructured.SetNestedSlice(crd.Object, versions, "spec", "versions")
}

// untaintNodes removes from the nodes (kwok reports them Ready before `up` returns) the taints
// that say a node is not ready yet: the API server puts node.kubernetes.io/not-ready on every new
// Node, and kube-controller-manager's node lifecycle controller, which the bench does not run,
// would remove it once the node is Ready. Without this the scheduler binds no Pod.
func (c *cluster) untaintNodes(ctx context.Context) error {
	for _, name := range c.nodes {
		// kwok writes the node's status and may win the race
		err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
			node, err := c.kube.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return err
			}
			kept := withoutNotReadyTaints(node.Spec.Taints)
			if len(kept) == len(node.Spec.Taints) {
				return nil
			}
			node.Spec.Taints = kept
			_, err = c.kube.CoreV1().Nodes().Update(ctx, node, metav1.UpdateOptions{})
			return err
		})
		if err != nil {
			return fmt.Errorf("untaint node %s: %w", name, err)
		}
	}
	return nil
}

// kwokGuard is the ValidatingAdmissionPolicy that hack/control-plane.sh installs with kwok, and
// has in force before kwok starts: kwok deletes only a Pod being deleted, as a kubelet does. kwok
// (v0.8.0) deletes a terminating Pod by name, without its UID as a precondition, and can then
// delete the Pod created anew under the same name, which both controllers do at once: in the
// first run at 100 parents, before the guard, kwok deleted 401 Pods in a policy change that
// deleted 100, and each controller created 4 Pods a parent.
const kwokGuard = "metacel-kwok-deletes-only-terminating-pods"

// requireKwokGuard fails when the control plane runs kwok without kwokGuard: its numbers would
// count kwok's deletions of new Pods.
func (c *cluster) requireKwokGuard(ctx context.Context) error {
	if _, err := c.kube.AdmissionregistrationV1().ValidatingAdmissionPolicies().Get(ctx, kwokGuard, metav1.GetOptions{}); err != nil {
		return fmt.Errorf("the control plane runs kwok without %s (hack/control-plane.sh installs it): %w", kwokGuard, err)
	}
	return nil
}

// withoutNotReadyTaints are taints but those the node lifecycle controller removes from a Ready
// node.
func withoutNotReadyTaints(taints []corev1.Taint) []corev1.Taint {
	var kept []corev1.Taint
	for _, t := range taints {
		if t.Key != corev1.TaintNodeNotReady && t.Key != corev1.TaintNodeUnreachable {
			kept = append(kept, t)
		}
	}
	return kept
}

// sample is the parent of samples/<file>.
func sample(repo, file string) (*unstructured.Unstructured, error) {
	raw, err := os.ReadFile(filepath.Join(repo, "samples", file))
	if err != nil {
		return nil, err
	}
	u := &unstructured.Unstructured{}
	if err := yaml.Unmarshal(raw, &u.Object); err != nil {
		return nil, fmt.Errorf("samples/%s: %w", file, err)
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
