// Package tree shows one parent of a policy as the cluster holds it, for `metacel tree`: the
// policy and version that sync it, its Synced and Ready conditions, each child it should have
// (there or missing, ready or the readyWhen that is not true yet, what the next sync would do to
// it, the last error a write of it met) and each related object it reads; and, for a policy, its
// parents with their conditions, the failing ones first. It only reads.
//
// A child may itself be the parent of a running policy (a Team's App, which a policy of Apps
// syncs): the tree shows that child's own tree beneath it, a given number of levels down (at
// most MaxDepth), each found as `metacel tree` finds a parent's policy: the policy of the policy
// namespace that claims the child's resource (of two, the first of the units by name) and whose
// label selector selects it. A parent already shown above is not shown again, so a cycle of kinds
// ends. A nested tree is the nested policy's own offline sync, never the outer policy's.
//
// Which children a parent should have, whether each is ready and what a sync would write are the
// runtime's own decision (package preview, with the children and related objects read here), so
// the tree cannot disagree with the runtime. For a parent being deleted, each child's next step
// is what the runtime's finalizer does (decide.Removals: deleted in the reverse of the order
// children are applied in, or waiting for the one that reads it), and a child being deleted that
// others wait for names them (Child.HoldsUp): the one that holds up the deletion. The last errors are the parent's Warning events
// about each child, which the runtime records (events.k8s.io: regarding the parent, related the
// child).
package tree
