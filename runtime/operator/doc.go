// Package operator is the metacel process: it connects to the cluster, loads the policies,
// runs one controller per policy over shared informers, and serves /metrics, /healthz and
// /readyz. `metacel run` is a thin flag parser over Run; tests run the same code in-process.
package operator
