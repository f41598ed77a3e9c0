//go:build e2e

package e2e

import (
	"cmp"
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"k8s.io/klog/v2"

	"metacel.dev/metacel/runtime/manifest"
	"metacel.dev/metacel/runtime/memo"
	"metacel.dev/metacel/runtime/operator"
	"metacel.dev/metacel/runtime/policystatus"
	"metacel.dev/metacel/runtime/rollout"
)

// Resources the tests read.
var (
	podsGVR        = schema.GroupVersionResource{Version: "v1", Resource: "pods"}
	configMapsGVR  = schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}
	deploymentsGVR = schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}
	jobsGVR        = schema.GroupVersionResource{Group: "batch", Version: "v1", Resource: "jobs"}
	myAppsGVR      = schema.GroupVersionResource{Group: "demo.rtfm.co.ua", Version: "v1", Resource: "myapps"}
	myIngressesGVR = schema.GroupVersionResource{Group: "demo.rtfm.co.ua", Version: "v1", Resource: "myingresses"}
	whaleSaysGVR   = schema.GroupVersionResource{Group: "devsectim.io", Version: "v1alpha1", Resource: "whalesays"}
	cmSyncsGVR     = schema.GroupVersionResource{Group: "apps.bixbite.io", Version: "v1", Resource: "configmapsyncs"}
	memcachedsGVR  = schema.GroupVersionResource{Group: "cache.example.com", Version: "v1alpha1", Resource: "memcacheds"}
	lbGVR          = schema.GroupVersionResource{Group: "elbv2.services.k8s.aws", Version: "v1alpha1", Resource: "loadbalancers"}
)

// The runtime's client settings in tests: `metacel run`'s defaults, or METACEL_BENCH_QPS (burst
// twice that) to measure how throughput follows the client's rate limit.
var (
	runtimeQPS     = envFloat("METACEL_BENCH_QPS", 50)
	runtimeBurst   = int(2 * runtimeQPS)
	runtimeWorkers = 4
)

func envFloat(name string, def float32) float32 {
	if v, err := strconv.ParseFloat(os.Getenv(name), 32); err == nil && v > 0 {
		return float32(v)
	}
	return def
}

// metacel is a metacel runtime running in-process for one test.
type metacel struct {
	writes atomic.Int64 // requests other than GET, LIST and WATCH (events and leases aside)
	// written counts those writes by URL path, and bookkept the runtime's writes of its own
	// records (events, Leases, policy status, rollout records)
	written, bookkept sync.Map // string -> *atomic.Int64
	// sent are the writes of policies' objects in the order sent (sentMu guards it)
	sentMu   sync.Mutex
	sent     []sentRequest
	registry *prometheus.Registry
	// stop stops the runtime and waits for it; the test's end stops it anyway
	stop func()
}

// startRuntime runs operator.Run (the code of `metacel run`) on the policies of dirs until the
// test ends, and waits until its caches have synced. It reads no policy ConfigMap.
func startRuntime(t testing.TB, dirs ...string) *metacel {
	t.Helper()
	return startRuntimeWith(t, operator.Options{PolicyDirs: dirs})
}

// startRuntimeWith runs the runtime with options (the test fills in the client and metrics).
func startRuntimeWith(t testing.TB, o operator.Options) *metacel {
	t.Helper()
	return startRuntimeAs(t, "", o)
}

// startRuntimeAs runs the runtime as user (impersonated; "" for the cluster admin), and waits
// until its caches have synced.
func startRuntimeAs(t testing.TB, user string, o operator.Options) *metacel {
	t.Helper()
	rt, ready, done := launchRuntime(t, user, o)
	select {
	case <-ready:
	case err := <-done:
		t.Fatalf("runtime stopped: %v", err)
	case <-time.After(60 * time.Second):
		t.Fatal("runtime caches did not sync in 60s")
	}
	return rt
}

// launchRuntime runs the runtime as user until the test ends; ready is closed once its caches
// have synced, done receives its result.
func launchRuntime(t testing.TB, user string, o operator.Options) (rt *metacel, ready <-chan struct{}, done <-chan error) {
	t.Helper()
	rt = &metacel{registry: prometheus.NewRegistry()}
	if o.PolicyNamespace == "" && o.Namespace == "" && o.LeaderElection == nil {
		// the runtime's own namespace, as POD_NAMESPACE gives it in a Pod: its records there are
		// this runtime's, never another test's
		o.Namespace = newNamespace(t, "metacel")
	}
	// the test policies mostly name no ServiceAccount; the deployed runtime runs as deployed
	o.AllowPoliciesWithoutServiceAccount = user != serviceAccount
	if user != serviceAccount && len(o.PolicyDirs) > 0 {
		grantPolicies(t, cmp.Or(o.PolicyNamespace, leaderNamespace(o), o.Namespace), o.PolicyDirs...)
	}
	cfg := runtimeConfig(t, user)
	cfg.QPS, cfg.Burst = runtimeQPS, runtimeBurst
	cfg.Wrap(func(next http.RoundTripper) http.RoundTripper {
		return roundTripFunc(func(r *http.Request) (*http.Response, error) {
			switch r.Method {
			case http.MethodGet, http.MethodHead:
			default:
				if bookkeeping(r) {
					count(&rt.bookkept, r.URL.Path)
				} else {
					rt.writes.Add(1)
					count(&rt.written, r.URL.Path)
					rt.sentMu.Lock()
					rt.sent = append(rt.sent, sentRequest{at: time.Now(), method: r.Method, path: r.URL.Path, contentType: r.Header.Get("Content-Type")})
					rt.sentMu.Unlock()
				}
			}
			return next.RoundTrip(r)
		})
	})
	ctx, cancel := context.WithCancel(klog.NewContext(context.Background(), klog.Background().V(1)))
	readyCh := make(chan struct{})
	doneCh := make(chan error, 1)
	go func() {
		o.Config, o.Workers, o.Registry, o.Ready = cfg, runtimeWorkers, rt.registry, readyCh
		doneCh <- operator.Run(ctx, o)
	}()
	var once sync.Once
	rt.stop = func() {
		once.Do(func() {
			cancel()
			if err := <-doneCh; err != nil {
				t.Errorf("runtime: %v", err)
			}
		})
	}
	t.Cleanup(rt.stop)
	return rt, readyCh, doneCh
}

// runtimeConfig is the runtime's client configuration as user: the deployed runtime's
// ServiceAccount by a token of its own (so that it may impersonate the policies' in turn), any
// other user impersonated by the admin, "" the admin.
func runtimeConfig(t testing.TB, user string) *rest.Config {
	t.Helper()
	if user != serviceAccount {
		cfg := rest.CopyConfig(cluster.config)
		cfg.Impersonate.UserName = user
		return cfg
	}
	cfg := rest.AnonymousClientConfig(cluster.config)
	cfg.BearerToken = serviceAccountToken(t, "metacel-system", "metacel")
	return cfg
}

func leaderNamespace(o operator.Options) string {
	if o.LeaderElection == nil {
		return ""
	}
	return o.LeaderElection.Namespace
}

// bookkeeping reports whether a request writes the runtime's own records rather than the
// policies' objects, or writes nothing: events, Leases (leader election, the ledger), the
// policies' status on their ConfigMaps, their rollout records and their memos, and the access
// reviews of the policies' ServiceAccounts.
func bookkeeping(r *http.Request) bool {
	return strings.Contains(r.URL.Path, "/events") || strings.Contains(r.URL.Path, "/leases") ||
		strings.Contains(r.URL.Path, "/subjectaccessreviews") || strings.Contains(r.URL.Path, "/selfsubjectreviews") ||
		strings.Contains(r.URL.RawQuery, "fieldManager="+policystatus.FieldManager) ||
		strings.Contains(r.URL.RawQuery, "fieldManager="+rollout.FieldManager) ||
		strings.Contains(r.URL.Path, "/configmaps/"+rollout.ConfigMapName("")) ||
		strings.Contains(r.URL.Path, "/configmaps/"+memo.ConfigMapName(""))
}

// sentRequest is a write the runtime sent.
type sentRequest struct {
	at                        time.Time
	method, path, contentType string
}

// sentSoFar returns the writes of policies' objects the runtime sent so far, in order.
func (rt *metacel) sentSoFar() []sentRequest {
	rt.sentMu.Lock()
	defer rt.sentMu.Unlock()
	return slices.Clone(rt.sent)
}

// count adds one to a path's count.
func count(m *sync.Map, path string) {
	n, _ := m.LoadOrStore(path, new(atomic.Int64))
	n.(*atomic.Int64).Add(1)
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// writesTo returns how many writes the runtime sent to a URL path.
func (rt *metacel) writesTo(path string) int64 {
	return loadCount(&rt.written, path)
}

// bookkeepingWritesTo returns how many writes of its own records the runtime sent to a URL path.
func (rt *metacel) bookkeepingWritesTo(path string) int64 {
	return loadCount(&rt.bookkept, path)
}

func loadCount(m *sync.Map, path string) int64 {
	if n, ok := m.Load(path); ok {
		return n.(*atomic.Int64).Load()
	}
	return 0
}

// writeCounts returns how many writes the runtime sent to each URL path so far.
func (rt *metacel) writeCounts() map[string]int64 {
	out := map[string]int64{}
	rt.written.Range(func(k, v any) bool {
		out[k.(string)] = v.(*atomic.Int64).Load()
		return true
	})
	return out
}

// writesSince returns the writes by URL path made since the counts before.
func (rt *metacel) writesSince(before map[string]int64) map[string]int64 {
	out := map[string]int64{}
	for path, n := range rt.writeCounts() {
		if d := n - before[path]; d > 0 {
			out[path] = d
		}
	}
	return out
}

// reconciles returns how many syncs a policy has run.
func (rt *metacel) reconciles(policy string) float64 {
	return rt.sum("controller_runtime_reconcile_total", "controller", policy, func(m *dto.Metric) float64 { return m.GetCounter().GetValue() })
}

// renders returns how many times a policy's CEL has been evaluated for a parent (renders).
func (rt *metacel) renders(policy string) uint64 {
	return uint64(rt.sum("metacel_cel_eval_duration_seconds", "policy", policy, func(m *dto.Metric) float64 { return float64(m.GetHistogram().GetSampleCount()) }))
}

// sum adds up what value reads of each sample of a metric whose label is labelValue.
func (rt *metacel) sum(metric, label, labelValue string, value func(*dto.Metric) float64) float64 {
	families, _ := rt.registry.Gather()
	total := 0.0
	for _, f := range families {
		if f.GetName() != metric {
			continue
		}
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == label && l.GetValue() == labelValue {
					total += value(m)
				}
			}
		}
	}
	return total
}

// newNamespace creates a namespace for one test and deletes it when the test ends.
func newNamespace(t testing.TB, prefix string) string {
	t.Helper()
	ns, err := cluster.kube.CoreV1().Namespaces().Create(t.Context(), &corev1.Namespace{
		ObjectMeta: metav1.ObjectMeta{GenerateName: prefix + "-"},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cluster.kube.CoreV1().Namespaces().Delete(context.Background(), ns.Name, metav1.DeleteOptions{})
	})
	return ns.Name
}

// readObjects reads the objects of a YAML file.
func readObjects(t testing.TB, path string) []*unstructured.Unstructured {
	t.Helper()
	objs, err := manifest.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return objs
}

// configMapSync creates a source ConfigMap app-config in src and the ConfigMapSync sample in src
// copying it to dst.
func configMapSync(t testing.TB, src, dst string) {
	t.Helper()
	// dst's owners let ConfigMapSyncs copy into it (the policy's confinement)
	patch := []byte(`{"metadata":{"labels":{"configmapsync.apps.bixbite.io/destination":"true"}}}`)
	if _, err := cluster.kube.CoreV1().Namespaces().Patch(t.Context(), dst, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	create(t, configMapsGVR, &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "v1", "kind": "ConfigMap",
		"metadata": map[string]any{"name": "app-config", "namespace": src},
		"data":     map[string]any{"LOG_LEVEL": "info"},
	}})
	parent := sample(t, "configmapsync", src)
	_ = unstructured.SetNestedField(parent.Object, src, "spec", "sourceNamespace")
	_ = unstructured.SetNestedField(parent.Object, dst, "spec", "destinationNamespace")
	create(t, cmSyncsGVR, parent)
}

// sample returns the parent of samples/<name>.yaml, moved to namespace ns.
func sample(t testing.TB, name, ns string) *unstructured.Unstructured {
	t.Helper()
	objs := readObjects(t, filepath.Join(repo, "samples", name+".yaml"))
	parent := objs[len(objs)-1] // the parent comes last
	parent.SetNamespace(ns)
	return parent
}

func create(t testing.TB, gvr schema.GroupVersionResource, obj *unstructured.Unstructured) *unstructured.Unstructured {
	t.Helper()
	out, err := cluster.dynamic.Resource(gvr).Namespace(obj.GetNamespace()).Create(t.Context(), obj, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create %s %s/%s: %v", gvr.Resource, obj.GetNamespace(), obj.GetName(), err)
	}
	return out
}

func get(t testing.TB, gvr schema.GroupVersionResource, ns, name string) (*unstructured.Unstructured, error) {
	t.Helper()
	return cluster.dynamic.Resource(gvr).Namespace(ns).Get(t.Context(), name, metav1.GetOptions{})
}

// waitFor polls until the object exists and check passes, and returns it.
func waitFor(t testing.TB, gvr schema.GroupVersionResource, ns, name string, timeout time.Duration, check func(*unstructured.Unstructured) error) *unstructured.Unstructured {
	t.Helper()
	var obj *unstructured.Unstructured
	eventually(t, timeout, fmt.Sprintf("%s %s/%s", gvr.Resource, ns, name), func() error {
		var err error
		if obj, err = get(t, gvr, ns, name); err != nil {
			return err
		}
		if check != nil {
			return check(obj)
		}
		return nil
	})
	return obj
}

// waitGone polls until the object no longer exists.
func waitGone(t testing.TB, gvr schema.GroupVersionResource, ns, name string, timeout time.Duration) {
	t.Helper()
	eventually(t, timeout, fmt.Sprintf("%s %s/%s is deleted", gvr.Resource, ns, name), func() error {
		_, err := get(t, gvr, ns, name)
		switch {
		case apierrors.IsNotFound(err):
			return nil
		case err != nil:
			return err
		}
		return fmt.Errorf("still there")
	})
}

// condition returns a status condition of an object.
func condition(obj *unstructured.Unstructured, typ string) map[string]any {
	conds, _, _ := unstructured.NestedSlice(obj.Object, "status", "conditions")
	for _, c := range conds {
		if m, ok := c.(map[string]any); ok && m["type"] == typ {
			return m
		}
	}
	return nil
}

// hasCondition checks a condition's status and, when not empty, its reason and message.
func hasCondition(typ, status, reason, message string) func(*unstructured.Unstructured) error {
	return func(obj *unstructured.Unstructured) error {
		c := condition(obj, typ)
		switch {
		case c == nil:
			return fmt.Errorf("no %s condition yet", typ)
		case c["status"] != status, reason != "" && c["reason"] != reason, message != "" && c["message"] != message:
			return fmt.Errorf("condition %s is %v/%v %q, want %s/%s %q", typ, c["status"], c["reason"], c["message"], status, reason, message)
		case c["observedGeneration"] != obj.GetGeneration():
			return fmt.Errorf("condition %s is for generation %v, want %d", typ, c["observedGeneration"], obj.GetGeneration())
		}
		return nil
	}
}

func str(obj *unstructured.Unstructured, fields ...string) string {
	s, _, _ := unstructured.NestedString(obj.Object, fields...)
	return s
}

// expectEqual fails the test when got differs from want.
func expectEqual[T comparable](t *testing.T, what string, got, want T) {
	t.Helper()
	if got != want {
		t.Errorf("%s: got %v, want %v", what, got, want)
	}
}

// waitEvent waits for an events.k8s.io/v1 Event about an object with a reason, and returns its note.
func waitEvent(t *testing.T, ns, regarding, reason string) string {
	t.Helper()
	var note string
	eventually(t, wait, fmt.Sprintf("event %s on %s", reason, regarding), func() error {
		list, err := cluster.kube.EventsV1().Events(ns).List(t.Context(), metav1.ListOptions{})
		if err != nil {
			return err
		}
		for _, e := range list.Items {
			if e.Regarding.Name == regarding && e.Reason == reason && e.ReportingController == "metacel" {
				note = e.Note
				return nil
			}
		}
		return fmt.Errorf("none among %d events", len(list.Items))
	})
	return note
}

// buildMetacel returns the path of `metacel` built from the work tree, built by the first test
// that asks for it and shared by the package's tests (a link alone takes seconds, and 19 tests
// ask), in a directory of the package's run (TestMain removes it).
func buildMetacel(t *testing.T) string {
	t.Helper()
	metacelBuild.once.Do(func() {
		metacelBuild.bin = filepath.Join(metacelBuild.dir, "metacel")
		metacelBuild.err = goBuildMetacel(metacelBuild.bin)
	})
	if metacelBuild.err != nil {
		t.Fatal(metacelBuild.err)
	}
	return metacelBuild.bin
}

// metacelBuild is buildMetacel's binary, or why it could not be built, in dir (made by TestMain).
var metacelBuild struct {
	once     sync.Once
	dir, bin string
	err      error
}

// goBuildMetacel builds ./cmd/metacel into bin.
func goBuildMetacel(bin string) error {
	cmd := exec.Command("go", "build", "-o", bin, "./cmd/metacel")
	cmd.Dir = repo
	// as make build and the Dockerfile build it: without cgo, the kubectl flags' kustomize does not
	// keep every exported method (Go's plugin package), which doubles the binary and its RSS
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("go build ./cmd/metacel: %w\n%s", err, out)
	}
	return nil
}
