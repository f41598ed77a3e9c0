package operator

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
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
	"metacel.dev/metacel/runtime/shard"
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
