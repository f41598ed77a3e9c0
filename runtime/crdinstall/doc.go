// Package crdinstall decides what the runtime does with the CustomResourceDefinition of a policy
// that installs its parent's CRD (spec.parentSchema.install): create it, update it, leave it as it
// is, or refuse. The decision is read from the CRD in the API server, never only remembered: the
// label metacel.dev/installed-by says the runtime installed it (and for which policy), the
// annotation metacel.dev/parent-schema-hash says from which declaration, so that a restart over
// CRDs that are up to date writes nothing. A CRD whose parents convert through the runtime's
// webhook carries that declaration too (metacel.dev/parent-declaration), the conversions in CEL
// included: what converts its parents is read from the CRD, whatever the policy sources hold.
//
// A CRD without the label is someone else's and is never modified. A change to an installed CRD
// is refused when a stored parent would not survive it (Breaks): a field it holds that the new
// schema no longer declares (the API server would prune it: a removed or renamed field), or a
// value the new schema rejects (a narrowed type, a new required field, a tighter bound, a value
// no longer in an enum). The stored parents are checked rather than the two schemas compared, so
// that a change that breaks no parent goes through, and one that does names the parents and their
// fields. The check uses the API server's own pruning and validation code
// (k8s.io/apiextensions-apiserver), so that it judges as the API server would. The policy may
// allow a breaking change (contract.AnnotationAllowBreakingSchemaChange). A CRD is never deleted.
//
// The writes themselves (server-side apply with field manager metacel, as the policy's
// ServiceAccount) are the operator's: this package only decides.
package crdinstall
