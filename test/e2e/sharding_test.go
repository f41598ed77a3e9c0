//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/klog/v2"

	"metacel.dev/metacel/runtime/contract"
	"metacel.dev/metacel/runtime/hashslot"
	"metacel.dev/metacel/runtime/operator"
)

// testSharding keeps the tests short: a replica's slots move 6 s after it stops renewing.
func testSharding(ns, identity string) *operator.Sharding {
	return &operator.Sharding{Namespace: ns, Identity: identity, LeaseDuration: 6 * time.Second, RenewDeadline: 4 * time.Second, RenewInterval: time.Second}
}

// syncLog records each replica's syncs of each parent.
type syncLog struct {
	mu    sync.Mutex
	byKey map[string][]syncSpan
}

type syncSpan struct {
	replica    string
	start, end time.Time
}

func (l *syncLog) hook(replica string) func(policy, key string, start, end time.Time) {
	return func(_, key string, start, end time.Time) {
		l.mu.Lock()
		defer l.mu.Unlock()
		l.byKey[key] = append(l.byKey[key], syncSpan{replica, start, end})
	}
}

// overlaps returns the parents that two replicas synced at the same time.
func (l *syncLog) overlaps() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []string
	for key, spans := range l.byKey {
		sort.Slice(spans, func(i, j int) bool { return spans[i].start.Before(spans[j].start) })
		for i := 1; i < len(spans); i++ {
			if prev := spans[i-1]; prev.replica != spans[i].replica && spans[i].start.Before(prev.end) {
				out = append(out, fmt.Sprintf("%s (%s and %s)", key, prev.replica, spans[i].replica))
			}
		}
	}
	return out
}

// synced returns how many parents each replica synced.
func (l *syncLog) synced() map[string]int {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := map[string]int{}
	for _, spans := range l.byKey {
		seen := map[string]bool{}
		for _, s := range spans {
			if !seen[s.replica] {
				seen[s.replica] = true
				out[s.replica]++
			}
		}
	}
	return out
}

// target is a cluster the sharding tests run on.
type target struct {
	cfg  *rest.Config
	dyn  dynamic.Interface
	kube kubernetes.Interface
}

func targetOf(t *testing.T, cfg *rest.Config) target {
	t.Helper()
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	kube, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return target{cfg: cfg, dyn: dyn, kube: kube}
}

// startShardReplica runs a sharded runtime in-process on the target until the test ends; its metrics
// go to the registry returned.
func startShardReplica(t *testing.T, tg target, o operator.Options) *prometheus.Registry {
	t.Helper()
	reg := prometheus.NewRegistry()
	cfg := rest.CopyConfig(tg.cfg)
	cfg.QPS, cfg.Burst = runtimeQPS, runtimeBurst
	ctx, cancel := context.WithCancel(klog.NewContext(context.Background(), klog.Background().V(1)))
	done := make(chan error, 1)
	go func() {
		o.Config, o.Workers, o.Registry = cfg, runtimeWorkers, reg
		o.AllowPoliciesWithoutServiceAccount = true // the test's policy names no ServiceAccount
		done <- operator.Run(ctx, o)
	}()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("replica: %v", err)
		}
	})
	return reg
}

// createWidgets creates n Widgets in ns, a few at a time.
func createWidgets(t *testing.T, dyn dynamic.Interface, ns, prefix string, n int) {
	t.Helper()
	var wg sync.WaitGroup
	const writers = 8
	for w := range writers {
		wg.Go(func() {
			for i := w; i < n; i += writers {
				name := fmt.Sprintf("%s-%04d", prefix, i)
				obj := &unstructured.Unstructured{Object: map[string]any{
					"apiVersion": "e2e.metacel.dev/v1", "kind": "Widget",
					"metadata": map[string]any{"name": name, "namespace": ns},
					"spec":     map[string]any{"color": "blue"},
				}}
				if _, err := dyn.Resource(widgetsGVR).Namespace(ns).Create(t.Context(), obj, metav1.CreateOptions{}); err != nil {
					t.Errorf("create widget %s: %v", name, err)
					return
				}
			}
		})
	}
	wg.Wait()
}

// converged returns the number of Widgets of ns whose status says their child was written.
func converged(t *testing.T, dyn dynamic.Interface, ns string) (int, error) {
	list, err := dyn.Resource(widgetsGVR).Namespace(ns).List(t.Context(), metav1.ListOptions{})
	if err != nil {
		return 0, err
	}
	n := 0
	for _, w := range list.Items {
		if str(&w, "status", "color") == "blue" {
			n++
		}
	}
	return n, nil
}

func shardPolicy(t *testing.T, kube kubernetes.Interface, ns string) {
	t.Helper()
	cm := &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: "policy-shardwidget", Namespace: ns, Labels: map[string]string{"metacel.dev/policy": "true"}},
		Data:       map[string]string{"widget.yaml": readFile(t, filepath.Join("testdata", "policies", "shards", "widget.yaml"))},
	}
	if _, err := kube.CoreV1().ConfigMaps(ns).Create(t.Context(), cm, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// TestShardedReplicas runs three replicas with --shards=auto over 3,000 parents, on an API server
// that selects shards and on one that does not (the replicas then filter what they list and
// watch): every parent converges, each replica holds a third of them (±15 %), and no parent is
// synced by two replicas at once.
func TestShardedReplicas(t *testing.T) {
	tests := []struct {
		name string
		on   func(t *testing.T) target
	}{
		{"the API server selects shards (ShardedListAndWatch)", func(t *testing.T) target {
			// etcd and kube-apiserver alone: Widgets and their ConfigMaps need no controller, and
			// nothing is deleted (half the full control plane's 12 s start)
			tg := targetOf(t, startControlPlane(t, "METACEL_FEATURE_GATES=ShardedListAndWatch=true", "METACEL_COMPONENTS=etcd kube-apiserver"))
			installCRD(t, tg.dyn, filepath.Join("testdata", "crds", "widget.yaml"))
			return tg
		}},
		{"the API server ignores shard selectors", func(*testing.T) target { return targetOf(t, cluster.config) }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tg := tt.on(t)
			policyNS, ns := createNamespace(t, tg.kube, "shard-policies"), createNamespace(t, tg.kube, "shards")
			shardPolicy(t, tg.kube, policyNS)
			log := &syncLog{byKey: map[string][]syncSpan{}}
			regs := map[string]*prometheus.Registry{}
			for _, id := range []string{"replica-a", "replica-b", "replica-c"} {
				regs[id] = startShardReplica(t, tg, operator.Options{PolicyNamespace: policyNS, Sharding: testSharding(policyNS, id), OnSync: log.hook(id)})
			}
			eventually(t, wait, "the replicas share the 64 slots", func() error {
				total := 0.0
				for id, reg := range regs {
					n := registryValue(reg, "metacel_shard_slots", "")
					if n < 21 {
						return fmt.Errorf("%s holds %.0f slots", id, n)
					}
					total += n
				}
				if total != hashslot.Count {
					return fmt.Errorf("%.0f slots held", total)
				}
				return nil
			})
			const parents = 3000
			createWidgets(t, tg.dyn, ns, "w", parents)
			eventually(t, 3*wait, "every parent converged", func() error {
				n, err := converged(t, tg.dyn, ns)
				if err == nil && n != parents {
					err = fmt.Errorf("%d of %d", n, parents)
				}
				return err
			})
			for id, reg := range regs {
				held := registryValue(reg, "metacel_policy_parents", "")
				if share := held / (parents / 3); share < 0.85 || share > 1.15 {
					t.Errorf("%s holds %.0f parents in its cache, %.2f of a third", id, held, share)
				}
			}
			if o := log.overlaps(); len(o) > 0 {
				t.Errorf("%d parents synced by two replicas at once, e.g. %s", len(o), strings.Join(o[:min(3, len(o))], "; "))
			}
			t.Logf("parents synced by each replica: %v", log.synced())
		})
	}
}

// shardLeases returns the slots each live replica's Lease says it syncs, by identity.
func shardLeases(t *testing.T, kube kubernetes.Interface, ns string) map[string]string {
	t.Helper()
	list, err := kube.CoordinationV1().Leases(ns).List(t.Context(), metav1.ListOptions{LabelSelector: contract.LabelShardMember + "=true"})
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, l := range list.Items {
		if l.Spec.RenewTime != nil && time.Since(l.Spec.RenewTime.Time) < 6*time.Second {
			out[*l.Spec.HolderIdentity] = l.Annotations[contract.AnnotationShardSlots]
		}
	}
	return out
}

// slotsOf parses the slots a Lease shows ("0-20,40").
func slotsOf(s string) hashslot.Set {
	var out hashslot.Set
	for _, part := range strings.Split(s, ",") {
		var from, to int
		if n, _ := fmt.Sscanf(part, "%d-%d", &from, &to); n == 2 {
			out |= hashslot.SetOf(hashslot.Range{From: from, To: to + 1})
		} else if n, _ := fmt.Sscanf(part, "%d", &from); n == 1 {
			out |= hashslot.SetOf(hashslot.Range{From: from, To: from + 1})
		}
	}
	return out
}

// sharedAmong waits until exactly the replicas ids hold the 64 slots between them, each at least
// 21.
func sharedAmong(t *testing.T, kube kubernetes.Interface, ns string, ids ...string) {
	t.Helper()
	eventually(t, wait, fmt.Sprintf("the slots shared among %v", ids), func() error {
		leases := shardLeases(t, kube, ns)
		var union hashslot.Set
		for _, id := range ids {
			s := slotsOf(leases[id])
			if s.Count() < hashslot.Count/len(ids) {
				return fmt.Errorf("%s holds %q; leases %v", id, leases[id], leases)
			}
			union |= s
		}
		if union.Count() != hashslot.Count || len(leases) != len(ids) {
			return fmt.Errorf("leases %v", leases)
		}
		return nil
	})
}

// shardedObjectVersions returns the resourceVersion of every Widget and ConfigMap of ns, by kind/name.
func shardedObjectVersions(t *testing.T, dyn dynamic.Interface, ns string) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, gvr := range []schema.GroupVersionResource{widgetsGVR, configMapsGVR} {
		list, err := dyn.Resource(gvr).Namespace(ns).List(t.Context(), metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		for _, o := range list.Items {
			out[gvr.Resource+"/"+o.GetName()] = o.GetResourceVersion()
		}
	}
	return out
}

// TestAKilledReplicasParentsMove kills (SIGKILL) one of three sharded replicas: the survivors
// sync its parents within the Lease duration + 5 s, a parent created meanwhile converges; started
// again, it gets its share back and nothing is rewritten. On an API server with and without the
// ShardedListAndWatch gate.
func TestAKilledReplicasParentsMove(t *testing.T) {
	bin := buildMetacel(t)
	tests := []struct {
		name string
		on   func(t *testing.T) (target, string)
	}{
		{"the API server selects shards", func(t *testing.T) (target, string) {
			cfg, kubeconfig := startControlPlaneAt(t, "METACEL_FEATURE_GATES=ShardedListAndWatch=true")
			tg := targetOf(t, cfg)
			installCRD(t, tg.dyn, filepath.Join("testdata", "crds", "widget.yaml"))
			return tg, kubeconfig
		}},
		{"the API server ignores shard selectors", func(t *testing.T) (target, string) { return targetOf(t, cluster.config), cluster.kubeconfig }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tg, kubeconfig := tt.on(t)
			policyNS, ns := createNamespace(t, tg.kube, "kill-policies"), createNamespace(t, tg.kube, "kill")
			shardPolicy(t, tg.kube, policyNS)
			args := func(id string) []string {
				return []string{"run", "--allow-policies-without-service-account", "--kubeconfig", kubeconfig, "--policy-namespace", policyNS, "--shards=auto", "--shard-identity", id,
					"--shard-lease-duration=6s", "--shard-renew-deadline=4s", "--shard-renew-interval=1s",
					"--metrics-bind-address=0", "--health-probe-bind-address=0", "--v=2"}
			}
			procs := map[string]*process{}
			for _, id := range []string{"r-a", "r-b", "r-c"} {
				procs[id] = startProcess(t, bin, args(id)...)
			}
			sharedAmong(t, tg.kube, policyNS, "r-a", "r-b", "r-c")
			const parents = 300
			createWidgets(t, tg.dyn, ns, "w", parents)
			eventually(t, 2*wait, "every parent converged", func() error {
				n, err := converged(t, tg.dyn, ns)
				if err == nil && n != parents {
					err = fmt.Errorf("%d of %d", n, parents)
				}
				return err
			})

			killed := slotsOf(shardLeases(t, tg.kube, policyNS)["r-c"])
			procs["r-c"].kill9()
			at := time.Now()
			orphan := widgetIn(t, tg.dyn, ns, killed)
			eventually(t, wait, "the parent created in the killed replica's slots converged", func() error {
				w, err := tg.dyn.Resource(widgetsGVR).Namespace(ns).Get(t.Context(), orphan, metav1.GetOptions{})
				if err == nil && str(w, "status", "color") != "blue" {
					err = fmt.Errorf("status %v", w.Object["status"])
				}
				return err
			})
			took := time.Since(at)
			t.Logf("the survivors synced a parent of the killed replica's slots %s after the kill", took.Round(100*time.Millisecond))
			if took > 6*time.Second+5*time.Second {
				t.Errorf("the survivors synced the killed replica's parent after %s, more than the Lease duration (6s) + 5s", took.Round(100*time.Millisecond))
			}
			sharedAmong(t, tg.kube, policyNS, "r-a", "r-b")

			before := shardedObjectVersions(t, tg.dyn, ns)
			procs["r-c"] = startProcess(t, bin, args("r-c")...)
			sharedAmong(t, tg.kube, policyNS, "r-a", "r-b", "r-c")
			n, err := converged(t, tg.dyn, ns)
			if err != nil || n != parents+1 {
				t.Errorf("converged %d of %d: %v", n, parents+1, err)
			}
			after := shardedObjectVersions(t, tg.dyn, ns)
			for k, rv := range before {
				if after[k] != rv {
					t.Errorf("%s rewritten when the replica came back (resourceVersion %s, then %s)", k, rv, after[k])
				}
			}
		})
	}
}

// widgetIn creates Widgets until one's UID falls in slots, and returns its name.
func widgetIn(t *testing.T, dyn dynamic.Interface, ns string, slots hashslot.Set) string {
	t.Helper()
	for i := range 200 {
		name := fmt.Sprintf("late-%03d", i)
		obj := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "e2e.metacel.dev/v1", "kind": "Widget",
			"metadata": map[string]any{"name": name, "namespace": ns},
			"spec":     map[string]any{"color": "blue"},
		}}
		got, err := dyn.Resource(widgetsGVR).Namespace(ns).Create(t.Context(), obj, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if slots.Has(hashslot.Of(got.GetUID())) {
			return name
		}
		if err := dyn.Resource(widgetsGVR).Namespace(ns).Delete(t.Context(), name, metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	t.Fatalf("no Widget of 200 fell in the slots %s", slots.String())
	return ""
}
