// Package shard splits a policy's parents among the replicas of metacel that run with sharding
// on, so that N replicas each sync, cache and write about 1/N of them.
//
// The space of a parent's UID hash (64-bit FNV-1a, the hash the API server's sharded list and
// watch selects on) is cut into Slots equal slots. Replicas find each other through Leases, one
// per replica (metacel-shard-<identity>, labelled metacel.dev/shard-member, in the policy
// namespace), and each computes the same assignment from the live ones: contiguous runs of
// slots, one per replica in the order of their identities (Assign).
//
// Who holds a slot now is a table with one owner per slot, kept in a ConfigMap (metacel-shards)
// and changed only by compare-and-swap (its resourceVersion), so that two replicas whose views of
// the members differ for a moment never both take a slot. A replica lets go of a slot before it
// writes so in the table (its syncs of that slot have stopped: Coordinator's hold callback
// returns only then), and starts syncing a slot only after the table names it, and only when the
// slot's owner let go of it or its Lease expired or was deleted: an owner's Lease its informer
// has not seen (it has just started, or its informer is behind) is read from the API server
// first, since the compare-and-swap cannot tell a table read up to date from an owner alive.
// A replica that cannot renew its own Lease for RenewDeadline stops syncing everything, before
// any other replica may take its slots (LeaseDuration). So a slot is never synced by two
// replicas at once, whatever dies when.
//
// Slots are fixed (not one range per replica) so that when members come and go, the slots a
// replica keeps keep their informers: only the slots that move are listed and watched anew.
package shard
