package operator

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/utils/clock"

	"metacel.dev/metacel/runtime/apply"
	"metacel.dev/metacel/runtime/controller"
	"metacel.dev/metacel/runtime/informers"
	"metacel.dev/metacel/runtime/kinds"
	"metacel.dev/metacel/runtime/source"
)

// A swap hands over from the old controller to the new one: the old one stops once the new one
// has synced, before its workers start; a version replaced before its caches synced stops at
// once, and the one it was waiting to replace stops once the newest has synced. None is left
// running beside its successor, however fast the new one syncs.
func TestASwapLeavesOnlyTheNewestControllerRunning(t *testing.T) {
	// version n of the policy differs from the others by its resync period
	version := func(n int, children ...string) []byte {
		text := policyText("a", "namespaces") + "  childResources:\n    - {apiVersion: v1, resource: configmaps}\n"
		for _, c := range children {
			text += "    - {apiVersion: v1, resource: " + c + "}\n"
		}
		return []byte(text + fmt.Sprintf("  resyncPeriodSeconds: %d\n", 3600+n))
	}
	tests := []struct {
		name     string
		versions [][]byte // loaded in turn; each waits for the one before to sync, but for unsyncable ones
	}{
		{"one swap", [][]byte{version(1), version(2)}},
		{"a swap of a version that never synced", [][]byte{version(1), version(2, unsyncable), version(3)}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			for range 20 { // the hand-over must hold whoever wins the race to it
				s := handOverSet(t)
				var all []*running
				for _, data := range tc.versions {
					s.update(source.Snapshot{Source: "dir", Units: []source.Unit{{Name: "a.yaml", Data: data}}}, 1)
					r := s.ctrls.running["a"]
					all = append(all, r)
					if !strings.Contains(string(data), "resource: "+unsyncable) {
						waitClosed(t, r.synced, "the new version's caches synced")
					}
				}
				newest := all[len(all)-1]
				for i, r := range all[:len(all)-1] {
					waitClosed(t, r.done, fmt.Sprintf("version %d stopped once version %d synced", i+1, len(all)))
				}
				if stopped(newest) {
					t.Fatal("the newest version must run")
				}
				s.ctrls.stopAll()
			}
		})
	}
}

// unsyncable is a resource whose list always fails in handOverSet's cluster: a version that
// lists it never syncs.
const unsyncable = "secrets"

// handOverSet is a policy set on a fake cluster of namespaces and ConfigMaps (objects), where
// listing the resource unsyncable fails.
func handOverSet(t *testing.T, objects ...runtime.Object) *policySet {
	t.Helper()
	scheme := runtime.NewScheme()
	if err := corev1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	client := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(scheme, map[schema.GroupVersionResource]string{
		{Version: "v1", Resource: "namespaces"}: "NamespaceList", {Version: "v1", Resource: "configmaps"}: "ConfigMapList",
		{Version: "v1", Resource: unsyncable}: "SecretList",
	}, objects...)
	client.PrependReactor("list", unsyncable, func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, errors.New("forbidden, say")
	})
	reg := prometheus.NewRegistry()
	deps := controller.Deps{
		Mapper: kinds.NewCatalog(), Pool: informers.NewPool(t.Context(), client, nil),
		Metrics: controller.NewMetrics(reg), Clock: clock.RealClock{}, Writer: apply.NewWriter(client),
	}
	s := newPolicySet(t.Context(), deps, func() {}, 1, nil, reg)
	t.Cleanup(s.ctrls.stopAll)
	return s
}

func waitClosed(t *testing.T, c <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-c:
	case <-time.After(10 * time.Second):
		t.Fatalf("%s: not after 10s", what)
	}
}
