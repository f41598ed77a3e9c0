// Package controlplane tests the functions of hack/control-plane.sh that need no cluster, run
// by bash with the script's functions loaded (its main left out). The e2e tests and the bench
// start their clusters with that script, so a false "exited" there fails every one of them.
package controlplane
