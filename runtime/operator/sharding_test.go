package operator

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	kubefake "k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/rest"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"metacel.dev/metacel/runtime/contract"
	"metacel.dev/metacel/runtime/hashslot"
	"metacel.dev/metacel/runtime/shard"
	"metacel.dev/metacel/runtime/source"
)

// crdsClient is a dynamic client of a cluster with no CRD, which the run watches.
func crdsClient() *dynamicfake.FakeDynamicClient {
	return dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), map[schema.GroupVersionResource]string{
		{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}: "CustomResourceDefinitionList",
	})
}

// A sharded replica stopped cleanly (its context cancelled, as on SIGTERM) has given its slots
// back and deleted its Lease by the time its run returns, and the process exits: the others take
// its slots at once, not once its Lease has expired.
func TestACleanStopGivesTheSlotsBackBeforeTheRunReturns(t *testing.T) {
	const ns = "metacel-system"
	kube := kubefake.NewClientset()
	sh := Sharding{Namespace: ns, Identity: "r1", LeaseDuration: 15 * time.Second, RenewDeadline: 10 * time.Second, RenewInterval: 2 * time.Second}
	o := Options{Namespace: ns, Workers: 1, Sharding: &sh, Config: &rest.Config{Host: "http://127.0.0.1:1"}}
	r := &reconciler{
		o:           o,
		clients:     &clients{config: o.Config, dynamic: crdsClient(), discovery: kube.Discovery(), kube: kube},
		fence:       newShardFence(klog.Background(), sh, clock.RealClock{}),
		reg:         prometheus.NewRegistry(),
		markReady:   func() {},
		errs:        make(chan error, 1),
		shardClient: kube,
	}
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	returned := make(chan error, 1)
	go func() { returned <- r.run(ctx) }()
	leases := kube.CoordinationV1().Leases(ns)
	eventually(t, 20*time.Second, "r1 says it syncs every slot", func() error {
		l, err := leases.Get(ctx, shard.LeaseName("r1"), metav1.GetOptions{})
		if err != nil {
			return err
		}
		if got := l.Annotations[contract.AnnotationShardSlots]; got != "0-63" {
			return fmt.Errorf("it says %q", got)
		}
		return nil
	})

	cancel()
	select {
	case err := <-returned:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(leaveTimeout + 5*time.Second):
		t.Fatal("the run did not return")
	}
	// the run has returned: a process exits now
	if l, err := leases.Get(t.Context(), shard.LeaseName("r1"), metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("the run returned with r1's Lease still there (slots %q, err %v): the others wait out its duration",
			l.GetAnnotations()[contract.AnnotationShardSlots], err)
	}
	table, err := kube.CoreV1().ConfigMaps(ns).Get(t.Context(), shard.TableName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if owners := table.Data["owners"]; strings.Contains(owners, `"r1"`) {
		t.Errorf("the run returned with r1 still owning slots in the table: %s", owners)
	}
}

// While a policy's new version has not synced its caches, its old version goes on syncing (its
// predecessor): it follows the slots the replica holds as the new one does, giving up the slots
// given up before the coordinator frees them, and syncing the slots gained.
func TestAnOldVersionThatStillSyncsFollowsTheSlots(t *testing.T) {
	const uid = "a9c7da18-d1e2-47c8-9f65-7a57d1d22461"
	// the replica holds slots throughout (the new version's slot informers never sync); the
	// parent's slot moves
	every := hashslot.SetOf(hashslot.Range{From: 0, To: hashslot.Count})
	others := every &^ hashslot.SetOf(hashslot.Range{From: hashslot.Of(uid), To: hashslot.Of(uid) + 1})
	tests := []struct {
		name       string
		from, to   hashslot.Set
		wantParent int
	}{
		{"the slots given up are no longer synced once the set has followed them", every, others, 0},
		{"the slots gained are synced", others, every, 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := shardedSet(t, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "n1", UID: uid}})
			s.setSlots(t.Context(), tc.from)
			version := func(n int, children ...string) []byte {
				text := policyText("a", "namespaces") + "  childResources:\n    - {apiVersion: v1, resource: configmaps}\n"
				for _, c := range children {
					text += "    - {apiVersion: v1, resource: " + c + "}\n"
				}
				return []byte(text + fmt.Sprintf("  resyncPeriodSeconds: %d\n", 3600+n))
			}
			s.update(source.Snapshot{Source: "dir", Units: []source.Unit{{Name: "a.yaml", Data: version(1)}}}, 1)
			old := s.ctrls.running["a"]
			waitClosed(t, old.synced, "version 1 synced")
			eventually(t, 10*time.Second, "version 1 syncs the parents of the slots it holds", func() error {
				if n, want := len(old.ctrl.Parents().Held()), 1-tc.wantParent; n != want {
					return fmt.Errorf("it syncs %d parents, want %d", n, want)
				}
				return nil
			})
			// version 2 never syncs (it lists a resource that cannot be listed): version 1 goes on
			s.update(source.Snapshot{Source: "dir", Units: []source.Unit{{Name: "a.yaml", Data: version(2, unsyncable)}}}, 1)
			if s.ctrls.running["a"] == old || stopped(old) {
				t.Fatalf("want version 1 running as version 2's predecessor: replaced %v, stopped %v", s.ctrls.running["a"] != old, stopped(old))
			}

			s.setSlots(t.Context(), tc.to)
			if tc.wantParent == 0 {
				// setSlots has returned: the coordinator frees the slots now
				if n := len(old.ctrl.Parents().Held()); n != 0 {
					t.Fatalf("the slots were given up, and version 1 still syncs %d parent(s) of them", n)
				}
				return
			}
			eventually(t, 10*time.Second, "version 1, the only version that syncs, syncs the parent of a slot gained", func() error {
				if n := len(old.ctrl.Parents().Held()); n != tc.wantParent {
					return fmt.Errorf("it syncs %d parents, want %d", n, tc.wantParent)
				}
				return nil
			})
		})
	}
}

// shardedSet is a sharded policy set on a fake cluster of objects (handOverSet's); it holds no
// slot.
func shardedSet(t *testing.T, objects ...runtime.Object) *policySet {
	t.Helper()
	s := handOverSet(t, objects...)
	s.shards = &shards{identity: "me", metrics: newShardMetrics(prometheus.NewRegistry(), "me"),
		reports: func() map[string]string { return nil }, allows: func(int) bool { return true }}
	return s
}
