// Package preview runs one sync of one parent offline, as the cluster would run it: what
// `metacel render` prints and `metacel test` checks.
//
// The runtime's own code renders (runtime/render, with RenderObserved matching observed children
// as the runtime does); what the cluster adds around a render is done here with the code the
// cluster runs, so that a mistake shows before anything is applied:
//   - the parent is admitted as the API server admits a create, with apiextensions-apiserver's code
//     (structural schema, pruning, defaulting, the OpenAPI schema validator, list types, embedded
//     metadata, x-kubernetes-validations rules, a parentSchema's included): a misspelt or
//     mistyped field is an error naming the field and the rule (with the value the field holds,
//     where the API server's validator names its type: values.go), and a default of the CRD is in
//     the parent the policy reads; as on a create, there is no old object, so a transition rule
//     (oldSelf, an immutable field) is left to the cluster;
//   - a parent without a UID gets a stable one (stableUID), and generation 1, as the API server
//     would give it, so that children's labels and ownerReferences are never empty;
//   - what the sync writes is decided by package decide, the runtime's own decision (Steps); the
//     observed children it would delete, release or recreate, and the objects it would conflict
//     with, are listed (Changes); an observed object that is no child of the parent is ignored
//     with a note, among them one no desired child is that carries no mark of the parent (a file
//     written by hand under a misspelt name: render.Kinship, rule 6), which is never deleted;
//   - the status is computed as the runtime computes it, rendered again with the children as
//     those writes leave them (decide.AfterWrites, with decide.Written standing for the API
//     server's answers: a created child as desired, one updated in place as observed with the
//     policy's fields merged in), and checked against the CRD's status schema as a status write
//     would be: a string in an integer field is an error naming the policy's status field. An
//     observed child given by hand (no content hash) keeps what it was given where the runtime
//     would recreate it or patch its bookkeeping, but is updated in place as the runtime would.
//
// Everything is deterministic: no clock (conditions get no new lastTransitionTime), no
// randomness, no network.
package preview
