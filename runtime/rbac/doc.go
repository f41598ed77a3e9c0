// Package rbac computes the least-privilege permissions that a set of policies needs, so that
// metacel's deployment grants exactly those instead of a wildcard role. The rules come from what
// the runtime does: it watches parents and writes their status and finalizers, applies, deletes
// and releases children, reads related objects (and namespaces, for the consent labels of a policy's confinement), records events, and reads CRDs to type parents
// and to notice the ones a waiting policy needs; a policy that installs its parent's CRD
// (parentSchema.install) may create and patch that CRD, by name, and no other. The namespaced permissions of the runtime itself
// (its policy ConfigMaps and its Lease) are fixed and live in deploy/.
package rbac
