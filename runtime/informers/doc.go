// Package informers holds the runtime's shared caches of the cluster's objects.
//
// A Pool keeps one informer per resource and label selector (and shard slot), refcounted, so
// that two policies with the same child kind watch it once, and a kind no policy uses any more
// stops being watched. Its caches hold objects as package compact keeps them (metadata decoded,
// the rest as JSON; an object larger than the pool's cap, KeepAtMost, without its body, read from
// the API server when a sync decodes it). A pooled informer keeps only the indexes its users ask
// for: children by their parent's UID (ByParentUID), parents by their own (ByUID), related objects
// by namespace. client-go's index holds a set per value, which for a value of one object (a UID)
// costs about 300 bytes, so the UID indexes keep a bucket of each UID (16,384 buckets), and a
// Cache's lookup keeps, of a bucket's objects, those of the UID: client-go's indexer offers no
// index of unique values, and the informers of client-go take no indexer of another kind.
//
// A Cache is one resource as a controller reads it: the pool's one informer of every object, or,
// with sharding (package shard), one informer per slot the replica holds, read as one, so that
// when slots move between replicas only the slots gained are listed. Its reads (by key, by index,
// all) return the objects' metadata, which is what a controller looks at before it decodes one.
//
// These live apart from package controller because they are the process's, not one policy's:
// package operator makes the pool, warms it ahead of a policy's controller, and retires the
// informers of a CRD whose schema changed.
package informers
