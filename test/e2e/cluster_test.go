//go:build e2e

package e2e

import (
	"fmt"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestNodesRenewTheirLease checks the simulated nodes heartbeat through a Lease, as kubelets do.
// Without it, kube-controller-manager marks every node NotReady 50 s after start, and the pods on
// it NotReady with them: parents that wait for their pods never become Ready again.
func TestNodesRenewTheirLease(t *testing.T) {
	nodes, err := cluster.kube.CoreV1().Nodes().List(t.Context(), metav1.ListOptions{})
	if err != nil || len(nodes.Items) == 0 {
		t.Fatalf("list nodes: %v (%d nodes)", err, len(nodes.Items))
	}
	for _, n := range nodes.Items {
		eventually(t, wait, "lease of node "+n.Name, func() error {
			lease, err := cluster.kube.CoordinationV1().Leases("kube-node-lease").Get(t.Context(), n.Name, metav1.GetOptions{})
			if err != nil {
				return err
			}
			if lease.Spec.RenewTime == nil || time.Since(lease.Spec.RenewTime.Time) > 40*time.Second {
				return fmt.Errorf("renewed at %v", lease.Spec.RenewTime)
			}
			return nil
		})
	}
}
