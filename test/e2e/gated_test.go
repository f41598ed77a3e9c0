//go:build e2e

package e2e

import (
	"path/filepath"
	"testing"
)

// onShardSelectingCluster makes the rest of the test run on a control plane of its own, whole
// (kube-scheduler, controller-manager, a kwok node) and with the CRDs of the shared one, whose
// API server selects shards (the ShardedListAndWatch gate): until the test ends, the helpers
// that use the shared cluster use this one. The e2e tests run one at a time (none calls
// t.Parallel), so no other test sees the swap.
func onShardSelectingCluster(t *testing.T) {
	t.Helper()
	cfg, kubeconfig := startControlPlaneAt(t, "METACEL_FEATURE_GATES=ShardedListAndWatch=true")
	shared := cluster
	t.Cleanup(func() { cluster = shared }) // before the control plane stops: cleanups run last first
	tg := targetOf(t, cfg)
	cluster.dir, cluster.kubeconfig, cluster.config, cluster.dynamic, cluster.kube = filepath.Dir(kubeconfig), kubeconfig, cfg, tg.dyn, tg.kube
	if err := installCRDs(); err != nil {
		t.Fatal(err)
	}
}
