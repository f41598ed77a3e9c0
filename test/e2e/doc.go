// Package e2e tests metacel against a real control plane: kube-apiserver and etcd, with
// kube-controller-manager (garbage collection, Deployments, Jobs), kube-scheduler and kwok
// (simulated nodes, so Pods run and Jobs complete), started by hack/control-plane.sh from
// binaries it builds once and caches outside the repository.
//
// The runtime runs in-process through operator.Run, the code behind `metacel run`, with a
// counting transport so tests can assert on the writes it makes. Every assertion reads the API
// server; waits poll with a deadline. The tests build only with the tag e2e (`make e2e`), so that
// `go test ./...` stays a unit test run.
package e2e
