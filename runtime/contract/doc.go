// Package contract holds the keys and reasons metacel writes on objects in the cluster: its
// labels and annotations (every metacel.dev/* key, and app.kubernetes.io/managed-by with its
// value), its finalizer, and the types and reasons of the conditions it writes on parents, with
// the reasons of the Warning events it records on them.
//
// They are in one place so that each has one meaning, one name and one definition: what metacel
// writes is a promise to whoever reads the cluster (kubectl, admission policies, other
// controllers, and the next version of metacel itself), and a key defined twice can drift in
// one copy only. The names say what a key means on which objects, grouped by those objects:
//
//   - children (children.go): who manages a child, which policy, parent and entry it belongs to,
//     its shard slot, and what metacel keeps on it for itself (its bookkeeping: the helpers
//     ChildLabels, IsBookkeepingLabel and the like say which keys those are);
//   - parents (parents.go): the record of their children, the finalizer, and the Synced and Ready
//     conditions with their reasons;
//   - policies (policies.go): the ConfigMaps that hold policies and the status the runtime shows
//     on them, a policy's own annotations, and the CRDs the runtime installs for policies;
//   - runtime records (records.go): the objects the runtime keeps for itself, the memos, the
//     ledger, the rollout records and the shard table and Leases.
//
// A key is never reused with another meaning once written: one that metacel stops writing is
// retired (RetiredChildLabels, RetiredChildAnnotations), not given a new sense. The one key with
// two meanings today, metacel.dev/policy (on a policy ConfigMap, and on a child), has two names
// here, LabelPolicyConfigMap and LabelChildPolicy.
//
// The package is a leaf: it imports nothing of metacel's own, so that every package can import
// it. docs/contract.md says what the runtime guarantees with these keys.
package contract
