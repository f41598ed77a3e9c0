// Package apistore is the read-compare-write the runtime's own state in the API server goes
// through: the memos (runtime/memo), the ledger (runtime/ledger), the rollout records
// (runtime/rollout) and the shard table and Leases (runtime/shard). Each of them keeps content in
// objects of its own, and writes an object only when what it wants there differs from what the
// object holds, so that a converged restart writes nothing.
//
// Get reads an object; one that does not exist is nil, not an error (a store never written is
// empty). Write creates or updates an object through a typed client of client-go (ConfigMaps(ns),
// Leases(ns)) with a field manager: set changes a copy of the object as read, and when it changes
// nothing no request is sent. An update carries the version read, so an object written meanwhile
// is a Conflict (created meanwhile: AlreadyExists), returned and never retried here: the shard
// table's compare-and-swap rests on it, and a store that retries wraps its read and its Write in
// client-go's retry.RetryOnConflict. Known is for the stores written by server-side apply (memos,
// rollout records): by name, the content last read or written by this process, so that a Put of
// that content sends nothing, and the first Put of a name reads what the object holds first.
//
// Why not client-go alone: the memos and records are written with apply configurations already,
// but an apply is a request whatever it changes (the API server compares, once the request is
// sent), the runtime may not patch Leases (its Role grants get, create and update on them), and
// an apply cannot ask for "create, unless it exists" or "over the version read", which the shard
// table needs. retry.RetryOnConflict is a loop around a read and a write, not the read, the
// comparison and the write; the loaded versions on a policy's ConfigMap (runtime/rollout,
// anchor.go) use it, with a merge patch that sends the annotation rather than the policy's whole
// source. controller-runtime's CreateOrUpdate has Write's shape, but it always reads first (the
// shard table is read from an informer, a replica's Lease is the one it last wrote), and it is a
// module the runtime does not use.
package apistore
