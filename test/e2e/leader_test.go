//go:build e2e

package e2e

import (
	"fmt"
	"path/filepath"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"metacel.dev/metacel/runtime/operator"
)

// TestLeaderElection runs two replicas: only the leader writes; when it stops, the standby takes
// over and parents created during the hand-over converge.
func TestLeaderElection(t *testing.T) {
	leaseNS := newNamespace(t, "lease")
	replica := func(identity string) *metacel {
		le := operator.DefaultLeaderElection(leaseNS)
		le.Identity = identity
		return startRuntimeWith(t, operator.Options{PolicyDirs: []string{filepath.Join("testdata", "policies", "resync")}, LeaderElection: &le})
	}
	holder := func() string {
		lease, err := cluster.kube.CoordinationV1().Leases(leaseNS).Get(t.Context(), "metacel", metav1.GetOptions{})
		if err != nil || lease.Spec.HolderIdentity == nil {
			return ""
		}
		return *lease.Spec.HolderIdentity
	}
	a := replica("replica-a")
	eventually(t, 30*time.Second, "replica-a leads", func() error {
		if h := holder(); h != "replica-a" {
			return fmt.Errorf("holder %q", h)
		}
		return nil
	})
	b := replica("replica-b")

	ns := newNamespace(t, "elected")
	for i := range 5 {
		create(t, widgetsGVR, widget(ns, fmt.Sprintf("w%d", i)))
	}
	for i := range 5 {
		waitFor(t, configMapsGVR, ns, fmt.Sprintf("w%d-widget", i), wait, nil)
	}
	if a.writes.Load() == 0 || b.writes.Load() != 0 {
		t.Errorf("only the leader writes: replica-a made %d writes, replica-b %d", a.writes.Load(), b.writes.Load())
	}

	start := time.Now()
	a.stop() // releases the Lease
	create(t, widgetsGVR, widget(ns, "during-hand-over"))
	eventually(t, 20*time.Second, "replica-b takes over", func() error {
		if h := holder(); h != "replica-b" {
			return fmt.Errorf("holder %q", h)
		}
		return nil
	})
	t.Logf("hand-over in %s", time.Since(start).Round(time.Millisecond))
	waitFor(t, configMapsGVR, ns, "during-hand-over-widget", wait, hasData("color", "blue"))
	if b.writes.Load() == 0 {
		t.Error("the new leader made no write")
	}
	// the namespace goes while the leader runs: the parents' cleanup finalizer is removed by a
	// running runtime only, and a namespace left terminating has the namespace controller retry
	// its deletions during the tests after this one
	if err := cluster.kube.CoreV1().Namespaces().Delete(t.Context(), ns, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitGone(t, schema.GroupVersionResource{Version: "v1", Resource: "namespaces"}, "", ns, wait)
}
