// Package ledger keeps, in the API server, the little a policy's controller must know across
// restarts and leader changes that the cluster's objects cannot tell it: the child resources a
// policy has had children of. When a new version of a policy stops listing a resource, nothing
// watches that resource any more, so no sync would find its children again; and a runtime that
// restarts (kill -9, a new leader) does not know the version it replaced. The ledger does: what
// it records is a superset of the resources holding the policy's children, written before any
// child of a new resource is created and narrowed only once the children of a dropped resource
// are gone, so a crash at any point leaves work to finish, never work forgotten.
//
// Each policy's entry is a coordination.k8s.io Lease named metacel-policy-<policy> in the
// namespace of the runtime's records: the policy namespace, else the leader election Lease's,
// else the runtime's own (package operator; a runtime with none of them refuses to start, for a
// ledger that is off forgets). The runtime may already read and write Leases there (leader
// election), and a Lease is never mistaken for a policy. Its annotation
// metacel.dev/child-resources lists the resources as group/version/resource. A Ledger made
// without a namespace is off (nil): it records nothing and knows nothing.
package ledger
