package contract

import "strings"

// DefaultPolicyNamespace is the policy namespace where metacel is installed as the docs install
// it (`metacel run --policy-namespace`, outside a Pod): its ConfigMaps hold the policies, and no
// policy may place a child in it. The offline commands (render, test, plan, tree) judge children
// against it unless told another.
const DefaultPolicyNamespace = "metacel-system"

// The keys on the ConfigMaps that hold policies, in the policy namespace.
const (
	// LabelPolicyConfigMap "true" marks a ConfigMap that holds policies: the runtime reads those
	// of the policy namespace, but the children of policies (package source). Its key is
	// LabelChildPolicyLegacy's, which earlier runtimes wrote on children with another meaning.
	LabelPolicyConfigMap = "metacel.dev/policy"
	// AnnotationLoadedVersions holds the versions of the ConfigMap's policies that the runtime
	// loaded from it: a JSON object of lists of versions (hashes, never text) by policy name,
	// oldest first, at most rollout.MaxLoadedVersions each besides those in use (package
	// rollout).
	AnnotationLoadedVersions = "metacel.dev/loaded-versions"
)

// The labels and annotations in which the runtime shows the state of a ConfigMap's policies
// (package policystatus): labels for `kubectl get -L`, summed up over the ConfigMap's policies,
// and annotations for the detail. Its status reporter owns these and no others of the
// ConfigMap's keys (AnnotationLoadedVersions is the rollout's, under a field manager of its own).
const (
	// LabelPolicyState is the most severe state of the ConfigMap's policies (policystatus.State:
	// Running, RollingOut, Invalid, ...).
	LabelPolicyState = "metacel.dev/state"
	// LabelPolicyVersion is the running version of the policy, shortened, or, for several, a
	// short hash of their versions.
	LabelPolicyVersion = "metacel.dev/version"
	// LabelPolicyParents is the number of the policies' parents.
	LabelPolicyParents = "metacel.dev/parents"
	// LabelPolicyReady is the number of those parents whose children are ready.
	LabelPolicyReady = "metacel.dev/ready"
	// LabelPolicyFailing is the number of those parents whose last sync failed.
	LabelPolicyFailing = "metacel.dev/failing"
	// LabelPolicyRollout is the step of a rollout under way ("2-of-3"); absent when none is.
	LabelPolicyRollout = "metacel.dev/rollout"
	// AnnotationPolicyLastError is the last error of the policies, each prefixed with its
	// policy's name when there are several.
	AnnotationPolicyLastError = "metacel.dev/last-error"
	// AnnotationPolicyStatus holds each policy's status, as JSON by policy name.
	AnnotationPolicyStatus = "metacel.dev/status"
)

// The keys a policy's author sets on the policy itself (its metadata.annotations): the runtime
// reads them, never writes them.
const (
	// AnnotationAllowBreakingSchemaChange "true" on a policy lets a change of the CRD it installs
	// that stored parents would not survive reach the CRD (package crdinstall).
	AnnotationAllowBreakingSchemaChange = "metacel.dev/allow-breaking-schema-change"
)

// ReadFromPolicy reports whether a key of a policy's own labels or annotations is one the runtime
// reads: metacel.dev/*, the keys above and any a later runtime adds. A change of any other key is
// not a new version of the policy (package rollout).
func ReadFromPolicy(key string) bool { return strings.HasPrefix(key, reservedPrefix) }

// The keys on the CRDs the runtime installs for policies (parentSchema.install, package
// crdinstall).
const (
	// LabelInstalledBy names, on a CRD, the policy that installed it: only such a CRD is modified.
	LabelInstalledBy = "metacel.dev/installed-by"
	// AnnotationParentSchemaHash is, on a CRD, the hash of what the runtime applied last: a CRD
	// whose hash is the declaration's is up to date, and not written again.
	AnnotationParentSchemaHash = "metacel.dev/parent-schema-hash"
	// AnnotationParentDeclaration is, on a CRD whose parents convert through the runtime's
	// webhook, the declaration of the policy it was made from (its parentResource and
	// parentSchema, the conversions in CEL included, as a policy document in JSON): every replica
	// converts the CRD's parents with it when no policy source declares what the CRD holds any
	// more (a change refused, then a restart; the policy removed).
	AnnotationParentDeclaration = "metacel.dev/parent-declaration"
	// AnnotationStorageMigration is, on a CRD whose stored parents are being migrated to its
	// storage version (package storagemigration), how far the migration got: the storage version,
	// the CRD's generation and the last object rewritten, as JSON, so that a restart resumes.
	AnnotationStorageMigration = "metacel.dev/storage-migration"
)
