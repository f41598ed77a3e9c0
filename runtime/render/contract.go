package render

import "strings"

// The marks metacel puts on what it manages: its contract with the cluster.
const (
	// LabelManagedBy marks every child; its value is ManagedByValue.
	LabelManagedBy = "app.kubernetes.io/managed-by"
	ManagedByValue = "metacel"
	// LabelPolicy holds the name of the policy a child belongs to.
	LabelPolicy = "metacel.dev/policy"
	// LabelParentUID holds the UID of the child's parent.
	LabelParentUID = "metacel.dev/parent-uid"
	// LabelChildID holds the id of the policy's child entry that produced the child.
	LabelChildID = "metacel.dev/child-id"
	// LabelShardSlot holds the slot of the parent's UID hash (package shard): replicas that shard
	// the parents watch each slot's children through it.
	LabelShardSlot = "metacel.dev/shard-slot"
	// AnnotationDeletionPolicy records on a child its entry's deletionPolicy when it is Orphan, so
	// that what becomes of the child is read from the child itself, even once its entry, or its
	// whole resource, is gone from the policy.
	AnnotationDeletionPolicy = "metacel.dev/deletion-policy"
	// AnnotationContentHash holds a hash of the child's content: the object as the policy
	// rendered it, before metacel added its bookkeeping (its labels and annotations, the parent's
	// ownerReference). Any change of what the policy wants changes it, so that the no-op check
	// (apply.Schema.NeedsApply) sees it where the child's fields alone cannot tell: a field, list
	// item or set value removed from the child, which the check does not look for. A change of
	// bookkeeping alone (a runtime that adds or renames a key) leaves it as it is, so that such a
	// child is patched in place, never recreated (package decide).
	AnnotationContentHash = "metacel.dev/content-hash"
	// AnnotationDesiredHash is retired: runtimes before the content hash wrote it, a hash of the
	// whole child as rendered, bookkeeping included. A child that still carries it is compared
	// with what such a runtime would have rendered (LegacyHeld), and loses it in the patch that
	// brings its bookkeeping up to date.
	AnnotationDesiredHash = "metacel.dev/desired-hash"
	// AnnotationChildren lists, on a parent, the UIDs of its children that garbage collection
	// does not remove with it (no ownerReference to it: cross-namespace, cluster-scoped and
	// Orphan ones), comma-separated: the children metacel wrote for it (ChildRecord).
	AnnotationChildren = "metacel.dev/children"
	// Finalizer is set on parents with children that cannot be owned (cross-namespace or
	// cluster-scoped), so that they are removed when the parent is deleted.
	Finalizer = "metacel.dev/cleanup"
)

// ChildLabels and ChildAnnotations are the keys this runtime writes on children for itself (its
// bookkeeping): the labels on every child, the annotations where they apply (the deletion policy
// of an Orphan child, the content hash of a rendered one).
var (
	ChildLabels      = []string{LabelManagedBy, LabelPolicy, LabelParentUID, LabelChildID, LabelShardSlot}
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

// Condition types and reasons written on parents.
const (
	ConditionSynced = "Synced"
	ConditionReady  = "Ready"

	ReasonSynced           = "Synced"
	ReasonReady            = "ChildrenReady"
	ReasonNotReady         = "ChildrenNotReady"
	ReasonReadyWhenFailed  = "ReadyWhenFailed" // a child's readyWhen failed to evaluate: Ready only
	ReasonValidationFailed = "ValidationFailed"
	ReasonEvaluationError  = "EvaluationError"
	ReasonInvalidChild     = "InvalidChild"
)
