// Package operator is the metacel process: it connects to the cluster, watches the policy
// sources, keeps one controller per policy running over shared informers, and serves /metrics,
// /healthz and /readyz. `metacel run` is a thin flag parser over Run; tests run the same code
// in-process.
//
// The policy set (policyset.go) is driven by one goroutine: each source snapshot, and each CRD
// change, reconciles it. A new or changed unit is compiled off to the side; a unit that fails
// keeps its last good policies. Conflicts (one name, or one parent resource, claimed twice) go to
// the policy that runs, else as the cluster says, the same in every process (conflicts.go: its
// rollout record, the age of its ledger Lease, else the unit whose name sorts first). A policy
// whose resources are not served yet waits for a CRD change. A new unit's informers start before
// it compiles (warmInformers), so that they list meanwhile. The set decides which version of which
// policy runs; the running controllers, what starts, hands over and stops them, are a type of their
// own (controllers, controllers.go), which the rollout driver runs versions with too. A
// changed policy's new controller acquires its informers before the old one is stopped, so that
// informers shared between them never stop and re-list; the old one keeps syncing until the new
// one's caches have synced, and stops before the new one's workers start (no gap, no overlap).
// Each failure to load is reported once per distinct cause. A CRD whose spec changes is the exception
// (crds.go): its informers are retired, so that the policies using it, compiled again against the
// new schema, restart on caches listed with it.
//
// A policy that declares spec.rollout is not swapped at once: its new version runs beside the
// previous one, each controller on its share of the parents, and the rollout driver
// (rolloutDriver, rollout.go) moves the shares step by step, or back, as package rollout decides
// from the moved parents' health; the rollout record in the API server lets a restarted runtime go
// on where it was. A policy that installs its parent's CRD (spec.parentSchema.install) has it
// installed by the CRD installer (crdInstaller, crdinstall.go) once the unit compiles against the
// CRD it would install; of the policies that install one CRD, one writes it, decided from the
// CRD's installed-by label and the units' names before any writes, so that a restart hands it to no other. Every second the
// policy set tells package policystatus each policy's state, which the leader writes as labels of
// the policy's ConfigMap (status.go). When the runtime stops, each controller's memory of its
// converged parents is saved as a memo (package memo), and a controller starting recalls it: a
// restart over converged parents renders none of them.
//
// With Options.Sharding (sharding.go), the replica takes part in sharding (package shard) instead
// of leader election: its coordinator's slots go to every controller, and the replica holding slot
// 0 writes the policies' status with the counts the others report in their Leases.
package operator
