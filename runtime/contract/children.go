package contract

import "strings"

// The labels metacel writes on every child.
const (
	// LabelManagedBy marks every child with ManagedByValue: the runtime watches children through
	// it, and it tells people and other tools that metacel manages the object. The runtime's
	// rollout records, ledger Leases, shard Leases and shard table carry it too.
	LabelManagedBy = "app.kubernetes.io/managed-by"
	// ManagedByValue is the value of LabelManagedBy on the objects metacel manages.
	ManagedByValue = "metacel"
	// LabelChildPolicy holds, on a child, the name of the policy it belongs to.
	//
	// Its key is LabelPolicyConfigMap's, which means something else on a ConfigMap: that it holds
	// policies (value "true"). The policy source tells them apart by LabelManagedBy (a child of a
	// policy is never read as a policy ConfigMap), and no policy may be named "true". Giving the
	// child's label a key of its own is a later change: it needs a migration of existing
	// children, which carry this key.
	LabelChildPolicy = "metacel.dev/policy"
	// LabelParentUID holds the UID of the child's parent: children are indexed by it.
	LabelParentUID = "metacel.dev/parent-uid"
	// LabelChildID holds the id of the policy's child entry that produced the child.
	LabelChildID = "metacel.dev/child-id"
	// LabelShardSlot holds the slot of the parent's UID hash (package hashslot): replicas that
	// shard the parents watch each slot's children through it.
	LabelShardSlot = "metacel.dev/shard-slot"
)

// The annotations metacel writes on children, where they apply.
const (
	// AnnotationDeletionPolicy records on a child its entry's deletionPolicy when it is Orphan,
	// so that what becomes of the child is read from the child itself, even once its entry, or
	// its whole resource, is gone from the policy.
	AnnotationDeletionPolicy = "metacel.dev/deletion-policy"
	// AnnotationContentHash holds a hash of the child's content: the object as the policy
	// rendered it, before metacel added its bookkeeping (its labels and annotations, the parent's
	// ownerReference). Any change of what the policy wants changes it, so that the no-op check
	// (noop.Schema.NeedsApply) sees it where the child's fields alone cannot tell: a field, list
	// item or set value removed from the child, which the check does not look for. A change of
	// bookkeeping alone (a runtime that adds or renames a key) leaves it as it is, so that such a
	// child is patched in place, never recreated (package decide).
	AnnotationContentHash = "metacel.dev/content-hash"
	// AnnotationDesiredHash is retired: runtimes before the content hash wrote it, a hash of the
	// whole child as rendered, bookkeeping included. A child that still carries it is compared
	// with what such a runtime would have rendered (render.LegacyHeld), and loses it in the patch
	// that brings its bookkeeping up to date.
	AnnotationDesiredHash = "metacel.dev/desired-hash"
)

// ChildLabels and ChildAnnotations are the keys this runtime writes on children for itself (its
// bookkeeping): the labels on every child, the annotations where they apply (the deletion policy
// of an Orphan child, the content hash of a rendered one).
var (
	ChildLabels      = []string{LabelManagedBy, LabelChildPolicy, LabelParentUID, LabelChildID, LabelShardSlot}
	ChildAnnotations = []string{AnnotationDeletionPolicy, AnnotationContentHash}
)

// RetiredChildLabels and RetiredChildAnnotations are the keys that earlier runtimes wrote on
// children and this one no longer writes: the patch that brings a child's bookkeeping up to date
// removes them. A key is never reused with another meaning once retired.
var (
	RetiredChildLabels      = []string{}
	RetiredChildAnnotations = []string{AnnotationDesiredHash}
)

// IsBookkeepingLabel reports whether a child's label is metacel's bookkeeping rather than the
// policy's content: metacel.dev/* and app.kubernetes.io/managed-by, which no template may set.
func IsBookkeepingLabel(key string) bool {
	return key == LabelManagedBy || strings.HasPrefix(key, reservedPrefix)
}

// IsBookkeepingAnnotation reports whether a child's annotation is metacel's bookkeeping:
// metacel.dev/*, which no template may set.
func IsBookkeepingAnnotation(key string) bool { return strings.HasPrefix(key, reservedPrefix) }

// reservedPrefix is the prefix of metacel's own labels and annotations.
const reservedPrefix = "metacel.dev/"
