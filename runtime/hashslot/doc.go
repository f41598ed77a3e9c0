// Package hashslot cuts the space of an object's UID hash into Count equal slots: the hash the
// API server's sharded list and watch selects on (64-bit FNV-1a of metadata.uid, the
// ShardedListAndWatch feature), a UID's slot (Of), runs of slots (Range) with the shard selector
// that lists and watches them, sets of slots (Set), and the slot a request's context writes for
// (WithSlot; Set.WithSlotOf also says whether a set holds an object's slot). It is pure arithmetic, so that the render (a child's metacel.dev/shard-slot label)
// needs nothing of the replicas' coordination (package shard).
//
// The selector is written by k8s.io/apimachinery/pkg/sharding, the API server's own. The hash is
// computed here, not with that package's HashField: HashField returns a hex string from a fresh
// hash/fnv state, two allocations on every event routed and every child rendered, where this is
// a loop over the UID's bytes; a test checks that both agree.
package hashslot
