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
// retired (RetiredChildLabels, RetiredChildAnnotations), not given a new sense.
//
// The one key that had two meanings, metacel.dev/policy (on a policy ConfigMap: it holds
// policies; on a child: the name of its policy), keeps the first (LabelPolicyConfigMap, which
// users write); the name of a child's policy moves to a key of its own,
// metacel.dev/policy-name (LabelChildPolicyName), in three versions, each safe to roll back to
// the one before it:
//
//  1. This version writes both keys, with the same value (LabelChildPolicyLegacy beside
//     LabelChildPolicyName), and reads either: in its caches (ChildPolicy) and from the API
//     server (ChildSelectors). A child an earlier version wrote, with the old key alone, is seen
//     as the child it is, and gets the new key in one bookkeeping patch (package decide),
//     never recreated. The version before, started again over its children, reads the old key
//     they all still carry and leaves the new one alone, as any key it does not know.
//  2. The next version that changes it writes the new key alone and retires the old one
//     (RetiredChildLabels: the bookkeeping patch removes it), and still reads either, for a
//     child its patches have not reached yet. Rolled back to this version, the children are
//     found by the new key; a version before this one reads the old key alone, so an upgrade
//     goes through this version, and a rollback from the next one goes back to this one.
//  3. A version after that reads the new key alone, once every child carries it. The old key
//     stays retired on children; only then may the rule that no policy is named "true" go.
//
// The package is a leaf: it imports nothing of metacel's own, so that every package can import
// it. docs/contract.md says what the runtime guarantees with these keys.
package contract
