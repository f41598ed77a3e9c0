//go:build e2e

package e2e

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/clientcmd"

	"metacel.dev/metacel/runtime/compact"
	"metacel.dev/metacel/runtime/hashslot"
	"metacel.dev/metacel/runtime/manifest"
)

var crdsGVR = schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}

// shardLabel marks the MyApps of this test (the shared cluster holds other tests' too).
const shardLabel = "e2e.metacel.dev/shardselector"

// shardClients are the clients of one control plane.
type shardClients struct {
	kube    kubernetes.Interface
	dynamic dynamic.Interface
	compact *compact.Client
}

func newShardClients(t *testing.T, cfg *rest.Config) shardClients {
	t.Helper()
	kube, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	cc, err := compact.NewClient(cfg, nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	return shardClients{kube: kube, dynamic: dyn, compact: cc}
}

// TestShardSelector checks runtime/shard and compact.ShardedListWatch against Kubernetes' alpha
// sharded list and watch: on a second control plane with the ShardedListAndWatch gate, the API
// server selects by hashslot.Range exactly the objects whose hashslot.Of is in it (our hash is the
// server's), in lists and watches; on the shared cluster (no gate) the probe says so, and the
// client-side fallback selects the same objects.
func TestShardSelector(t *testing.T) {
	gatedConfig := startControlPlane(t, "METACEL_FEATURE_GATES=ShardedListAndWatch=true", "METACEL_COMPONENTS=etcd kube-apiserver")
	gated := newShardClients(t, gatedConfig)
	installCRD(t, gated.dynamic, filepath.Join(repo, "crds", "myapp.yaml"))
	shared := newShardClients(t, cluster.config)

	t.Run("the probe tells a server with the gate from one without", func(t *testing.T) {
		cases := []struct {
			name    string
			clients shardClients
			want    bool
		}{
			{"with ShardedListAndWatch", gated, true},
			{"the shared cluster, without", shared, false},
		}
		for _, c := range cases {
			got, err := compact.ProbeShardSupport(t.Context(), c.clients.kube, "default")
			if err != nil || got != c.want {
				t.Errorf("%s: ProbeShardSupport = %v, %v; want %v", c.name, got, err, c.want)
			}
		}
	})

	t.Run("the API server lists exactly the objects of each range", func(t *testing.T) {
		ns := createNamespace(t, gated.kube, "shards")
		uids := createShardedMyApps(t, gated.dynamic, ns, "app", 200)
		ranges := singleSlotRanges()
		ranges = append(ranges, hashslot.Range{From: 0, To: 32}, hashslot.Range{From: 32, To: hashslot.Count},
			hashslot.Range{From: 0, To: hashslot.Count}, hashslot.Range{From: 5, To: 17}, hashslot.Range{From: 21, To: 43})
		logShardInfo(t, gated.compact.ShardedListWatch(myAppsGVR, "", hashslot.Range{From: 0, To: 32}, true))
		listed := map[types.UID]int{}
		for _, r := range ranges {
			got := listUIDs(t, gated.compact.ShardedListWatch(myAppsGVR, shardLabel+"="+ns, r, true))
			if want := inRange(uids, r); !slices.Equal(got, want) {
				t.Errorf("%s listed %d objects, want the %d whose slot is in [%d, %d) (%d of them)", r.Selector(), len(got), len(want), r.From, r.To, len(common(got, want)))
			}
			if r.To-r.From == 1 {
				for _, uid := range got {
					listed[uid]++
				}
			}
		}
		if got := slices.Sorted(maps.Keys(listed)); !slices.Equal(got, sortedUIDs(uids)) {
			t.Errorf("the single-slot ranges listed %d objects together, want all %d", len(got), len(uids))
		}
		for uid, n := range listed {
			if n != 1 {
				t.Errorf("%s was listed in %d single-slot ranges, want 1", uid, n)
			}
		}
	})

	t.Run("a sharded watch delivers only the objects of its range", func(t *testing.T) {
		ns := createNamespace(t, gated.kube, "shards-watch")
		checkShardedInformer(t, gated, ns, hashslot.Range{From: 16, To: 48}, true)
	})

	t.Run("the client-side fallback selects the same objects on a server without the gate", func(t *testing.T) {
		ns := newNamespace(t, "shardselector")
		uids := createShardedMyApps(t, shared.dynamic, ns, "app", 100)
		for _, r := range []hashslot.Range{{From: 0, To: 32}, {From: 32, To: hashslot.Count}, {From: 7, To: 8}, {From: 10, To: 50}} {
			got := listUIDs(t, shared.compact.ShardedListWatch(myAppsGVR, shardLabel+"="+ns, r, false))
			if want := inRange(uids, r); !slices.Equal(got, want) {
				t.Errorf("client-side %v listed %d objects, want the %d in it (%d of them)", r, len(got), len(want), len(common(got, want)))
			}
		}
		// Why the probe matters: a server without the gate ignores the shard selector.
		all := listUIDs(t, shared.compact.ShardedListWatch(myAppsGVR, shardLabel+"="+ns, hashslot.Range{From: 0, To: 1}, true))
		if !slices.Equal(all, sortedUIDs(uids)) {
			t.Errorf("a server without the gate listed %d of %d objects for a shard selector, want all (it ignores it)", len(all), len(uids))
		}
		checkShardedInformer(t, shared, newNamespace(t, "shardselector-watch"), hashslot.Range{From: 16, To: 48}, false)
	})
}

// startControlPlane starts a control plane of its own for the test (hack/control-plane.sh up,
// with env added to the environment) and stops it when the test ends.
func startControlPlane(t *testing.T, env ...string) *rest.Config {
	t.Helper()
	cfg, _ := startControlPlaneAt(t, env...)
	return cfg
}

// startControlPlaneAt is startControlPlane, and returns the path of its kubeconfig too.
func startControlPlaneAt(t *testing.T, env ...string) (*rest.Config, string) {
	t.Helper()
	dir := t.TempDir() // removed after the control plane is down (cleanups run last first)
	script := filepath.Join(repo, "hack", "control-plane.sh")
	up := exec.CommandContext(t.Context(), script, "up", dir)
	up.Env = append(os.Environ(), env...)
	start := time.Now()
	if out, err := up.CombinedOutput(); err != nil {
		t.Fatalf("start a control plane (%v): %v\n%s", env, err, out)
	}
	t.Logf("a control plane of its own (%v) up in %s", env, time.Since(start).Round(100*time.Millisecond))
	t.Cleanup(func() {
		if out, err := downAtOnce(script, dir).CombinedOutput(); err != nil {
			t.Errorf("stop the control plane: %v\n%s", err, out)
		}
	})
	kubeconfig := filepath.Join(dir, "kubeconfig")
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	cfg.QPS, cfg.Burst = 200, 400
	return cfg, kubeconfig
}

// installCRD creates the CRDs of a file and waits until they are served.
func installCRD(t *testing.T, dyn dynamic.Interface, file string) {
	t.Helper()
	crds, err := manifest.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	for _, crd := range crds {
		if _, err := dyn.Resource(crdsGVR).Create(t.Context(), crd, metav1.CreateOptions{}); err != nil {
			t.Fatalf("create CRD %s: %v", crd.GetName(), err)
		}
		eventually(t, 30*time.Second, "CRD "+crd.GetName()+" established", func() error {
			got, err := dyn.Resource(crdsGVR).Get(t.Context(), crd.GetName(), metav1.GetOptions{})
			if err != nil {
				return err
			}
			if condition(got, "Established")["status"] != "True" {
				return errors.New("not established")
			}
			return nil
		})
	}
}

// createNamespace creates a namespace on the cluster of kube (deleted with its control plane).
func createNamespace(t *testing.T, kube kubernetes.Interface, prefix string) string {
	t.Helper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: prefix + "-"}}
	created, err := kube.CoreV1().Namespaces().Create(t.Context(), ns, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return created.Name
}

// createShardedMyApps creates n MyApps named prefix-<i> in ns, labelled shardLabel=ns, a few at a time,
// and returns their UIDs.
func createShardedMyApps(t *testing.T, dyn dynamic.Interface, ns, prefix string, n int) []types.UID {
	t.Helper()
	uids := make([]types.UID, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	sem := make(chan struct{}, 20)
	for i := range n {
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			uids[i], errs[i] = createLabelledMyApp(t.Context(), dyn, ns, fmt.Sprintf("%s-%03d", prefix, i))
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
	return uids
}

func createLabelledMyApp(ctx context.Context, dyn dynamic.Interface, ns, name string) (types.UID, error) {
	obj := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "demo.rtfm.co.ua/v1", "kind": "MyApp",
		"metadata": map[string]any{"name": name, "namespace": ns, "labels": map[string]any{shardLabel: ns}},
		"spec":     map[string]any{"image": "nginx"},
	}}
	out, err := dyn.Resource(myAppsGVR).Namespace(ns).Create(ctx, obj, metav1.CreateOptions{})
	if err != nil {
		return "", fmt.Errorf("create MyApp %s/%s: %w", ns, name, err)
	}
	return out.GetUID(), nil
}

// checkShardedInformer runs an informer on ShardedListWatch(r, serverSide) over the MyApps of ns,
// creates MyApps before it starts and while it runs, and checks that its event handlers were
// never handed an object outside r and that its cache ends up holding exactly those in r. The
// last write is to an object in r, after the others: once the informer has seen it, it has seen
// (or been spared) every earlier event, as a watch delivers them in order.
func checkShardedInformer(t *testing.T, clients shardClients, ns string, r hashslot.Range, serverSide bool) {
	t.Helper()
	before := createShardedMyApps(t, clients.dynamic, ns, "before", 40)
	seen := &delivered{uids: map[types.UID]bool{}}
	inf := cache.NewSharedIndexInformer(clients.compact.ShardedListWatch(myAppsGVR, shardLabel+"="+ns, r, serverSide), &compact.Object{}, 0, cache.Indexers{})
	if _, err := inf.AddEventHandler(seen); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	go inf.RunWithContext(ctx)
	if !cache.WaitForCacheSync(ctx.Done(), inf.HasSynced) {
		t.Fatal("the sharded informer did not sync")
	}

	after := createShardedMyApps(t, clients.dynamic, ns, "after", 20)
	if n := len(inRange(after, r)); n == 0 || n == len(after) {
		t.Fatalf("%d of the %d MyApps created while watching are in %v: want some in and some out", n, len(after), r)
	}
	sentinel := markSentinel(t, clients.dynamic, ns, before, r)
	eventually(t, 30*time.Second, "the informer sees the last write", func() error {
		if !seen.sentinel(sentinel) {
			return fmt.Errorf("no update of %s yet", sentinel)
		}
		return nil
	})

	for _, uid := range seen.all() {
		if !r.Contains(uid) {
			t.Errorf("the informer was handed %s (slot %d), outside %v", uid, hashslot.Of(uid), r)
		}
	}
	var cached []types.UID
	for _, o := range inf.GetStore().List() {
		cached = append(cached, o.(*compact.Object).GetUID())
	}
	slices.Sort(cached)
	if want := inRange(append(before, after...), r); !slices.Equal(cached, want) {
		t.Errorf("the cache holds %d objects, want the %d in %v (%d of them)", len(cached), len(want), r, len(common(cached, want)))
	}
}

const sentinelAnnotation = "e2e.metacel.dev/sentinel"

// markSentinel annotates the first MyApp of uids (named before-<i>) in r, and returns its UID.
func markSentinel(t *testing.T, dyn dynamic.Interface, ns string, uids []types.UID, r hashslot.Range) types.UID {
	t.Helper()
	i := slices.IndexFunc(uids, r.Contains)
	if i < 0 {
		t.Fatalf("none of %d MyApps is in %v", len(uids), r)
	}
	patch := []byte(`{"metadata":{"annotations":{"` + sentinelAnnotation + `":"last"}}}`)
	if _, err := dyn.Resource(myAppsGVR).Namespace(ns).Patch(t.Context(), fmt.Sprintf("before-%03d", i), types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	return uids[i]
}

// delivered records the objects an informer hands its event handlers.
type delivered struct {
	mu     sync.Mutex
	uids   map[types.UID]bool
	marked map[types.UID]bool
}

func (d *delivered) record(obj any, final bool) {
	if tomb, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = tomb.Obj
	}
	o := obj.(*compact.Object)
	d.mu.Lock()
	defer d.mu.Unlock()
	d.uids[o.GetUID()] = true
	if final && o.GetAnnotations()[sentinelAnnotation] != "" {
		if d.marked == nil {
			d.marked = map[types.UID]bool{}
		}
		d.marked[o.GetUID()] = true
	}
}

func (d *delivered) OnAdd(obj any, _ bool) { d.record(obj, false) }
func (d *delivered) OnUpdate(_, obj any)   { d.record(obj, true) }
func (d *delivered) OnDelete(obj any)      { d.record(obj, false) }

func (d *delivered) sentinel(uid types.UID) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.marked[uid]
}

func (d *delivered) all() []types.UID {
	d.mu.Lock()
	defer d.mu.Unlock()
	return slices.Sorted(maps.Keys(d.uids))
}

func singleSlotRanges() []hashslot.Range {
	out := make([]hashslot.Range, hashslot.Count)
	for i := range out {
		out[i] = hashslot.Range{From: i, To: i + 1}
	}
	return out
}

// listUIDs lists through a list-watch, unpaged, and returns the objects' UIDs, sorted.
func listUIDs(t *testing.T, lw *cache.ListWatch) []types.UID {
	t.Helper()
	obj, err := lw.ListWithContext(t.Context(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var out []types.UID
	for _, o := range obj.(*compact.List).Items {
		out = append(out, o.GetUID())
	}
	slices.Sort(out)
	return out
}

// logShardInfo logs whether a sharded list answers with shardInfo (Kubernetes 1.36 echoes it
// for built-in resources, not for custom resources, which it filters all the same).
func logShardInfo(t *testing.T, lw *cache.ListWatch) {
	t.Helper()
	obj, err := lw.ListWithContext(t.Context(), metav1.ListOptions{Limit: 1})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("a sharded list of MyApps has shardInfo %+v", obj.(*compact.List).ShardInfo)
}

// inRange returns the UIDs in r, sorted.
func inRange(uids []types.UID, r hashslot.Range) []types.UID {
	var out []types.UID
	for _, uid := range uids {
		if r.Contains(uid) {
			out = append(out, uid)
		}
	}
	slices.Sort(out)
	return out
}

// common returns the UIDs in both a and b.
func common(a, b []types.UID) []types.UID {
	return slices.DeleteFunc(slices.Clone(a), func(uid types.UID) bool { return !slices.Contains(b, uid) })
}

func sortedUIDs(uids []types.UID) []types.UID {
	return slices.Sorted(slices.Values(uids))
}
