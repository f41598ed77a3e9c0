// Package rollout keeps, in the API server, which version of a policy serves its parents, and
// decides, step by step, when a new version reaches more of them.
//
// A policy that declares spec.rollout does not reach every parent at once when a new version
// loads: package operator runs both versions side by side, each controller on its share of the
// parents (a parent is on the new version at step s when policy.RolloutBucket of its UID is below
// the step's percent), and asks Decide, on every tick, whether the current step is done, must wait,
// or has failed. A failed rollout moves every parent back to the version that was stable.
//
// The Record is what a runtime that restarts (kill -9, a new leader) must know to go on where it
// was: which version was stable, with its source (the policy's ConfigMap holds only the newest),
// the version rolling out or rolled back, and the step with the time it started. It lives in a
// ConfigMap metacel-rollout-<policy> in the policy namespace, next to the policies: the runtime
// reads and writes ConfigMaps there already, a ConfigMap holds a policy's source (up to 1 MiB)
// where a Lease annotation would not, and it carries no metacel.dev/policy label, so it is never
// read as a policy. When the record says nothing changed, nothing is written: a restart over a
// stable policy costs one read per policy.
package rollout
