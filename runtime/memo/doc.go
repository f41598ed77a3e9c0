// Package memo keeps, in the API server, what a policy's controller knew of its converged parents
// when it stopped, so that starting again over them costs what a hand-written controller's start
// costs: a look at the caches, no render.
//
// A controller remembers, per parent, a fingerprint of the inputs of its last successful sync
// (the resourceVersions of the parent and of its children; runtime/controller, unchanged.go): a
// sync of the same inputs would render and compare the same again, and finds nothing to do. That
// memory dies with the process, so a restart rendered every parent once. A memo is that memory
// written down when the controller stops (a SIGTERM, a lost leadership), and read back when it
// starts: a parent whose inputs are still exactly those of an entry is known to be converged.
// A resourceVersion is never reused, so an entry matches only the very objects the sync saw; any
// change since (a child deleted, edited, a parent's spec or status) is a miss, synced in full.
//
// What the inputs do not cover is the memo's scope, and a memo of another scope is ignored:
// the binary (its Go build ID: another build may render differently), the policy's version and
// the schemas of the CRDs it uses. A memo is an optimization only: none, one lost to a kill -9, or
// one that cannot be read is a restart that syncs every parent in full, as before.
//
// Each policy's memo is the ConfigMap metacel-memo-<policy> in the runtime's namespace (the
// policy namespace; without one, memos are off): its binaryData holds the fingerprints, 9 bytes
// a parent, at most MaxEntries of them (a ConfigMap holds 1 MiB). It is written only when it
// changed: a restart over converged parents writes nothing. Nothing else is read or written here.
package memo
