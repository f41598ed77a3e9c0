// Package shard splits a policy's parents among the replicas of metacel that run with sharding
// on, so that N replicas each sync, cache and write about 1/N of them.
//
// The space of a parent's UID hash (64-bit FNV-1a, the hash the API server's sharded list and
// watch selects on) is cut into equal slots (package hashslot, the arithmetic; this package is
// the coordination). Replicas find each other through Leases, one
// per replica (metacel-shard-<identity>, labelled metacel.dev/shard-member, in the policy
// namespace), and each computes the same assignment from the live ones: contiguous runs of
// slots, one per replica in the order of their identities (Assign).
//
// Who holds a slot now is a table with one owner per slot, kept in a ConfigMap (metacel-shards)
// and changed only by compare-and-swap (its resourceVersion), so that two replicas whose views of
// the members differ for a moment never both take a slot (table.go). A replica takes a slot when
// the table gives it no owner, or names it, or names a replica gone, and no live replica's Lease
// says it syncs the slot; it writes the table first, then says so in its Lease, then syncs. It
// gives a slot up by stopping its writes at once, then its syncs (Coordinator's Hold returns once
// those under way have ended, on a goroutine of its own), then freeing it in the table.
//
// A replica is gone when this replica has seen no change of its Lease for the duration the Lease
// advertises, by this replica's clock (peers.go): never by the renewTime another machine wrote, and
// a deleted Lease counts from when it last changed. Before taking a gone owner's slots, its Lease
// is read from the API server (the informer may be behind a renewal). A table missing or
// unreadable is rebuilt from what the live Leases say, and holders write back their slots.
//
// Every write a replica makes for a parent passes Allows (the operator's write fence asks it for
// the slot a request carries, hashslot.WithSlot): the slot is held and not being given up, and the last
// successful renewal was sent less than RenewDeadline ago, by the monotonic clock. A replica
// renews on its own goroutine, and checks that deadline before each renewal and once it is
// answered: once passed (it was paused, or the API server unreachable or slow), it stops every
// slot before the renewal counts, and takes them again only through the table read anew
// (lease.go). Others take its slots no sooner than
// LeaseDuration after they last saw its Lease change, which it sent before: so no slot is written
// by two replicas at once, whatever pauses, skews or disappears. (A write sent before the
// deadline can still arrive late: LeaseDuration - RenewDeadline is its margin, as for leader
// election.)
//
// Slots are fixed (not one range per replica) so that when members come and go, the slots a
// replica keeps keep their informers: only the slots that move are listed and watched anew.
package shard
