package render

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
	// AnnotationDesiredHash holds a hash of the child as the policy rendered it (this annotation
	// aside): any change of what the policy wants changes it, so that the no-op check
	// (apply.Schema.NeedsApply) sees it where the child's fields alone cannot tell: a field, list
	// item or set value removed from the child, which the check does not look for.
	AnnotationDesiredHash = "metacel.dev/desired-hash"
	// AnnotationChildren lists, on a parent, the UIDs of its children that garbage collection
	// does not remove with it (no ownerReference to it: cross-namespace, cluster-scoped and
	// Orphan ones), comma-separated: the children metacel wrote for it (ChildRecord).
	AnnotationChildren = "metacel.dev/children"
	// Finalizer is set on parents with children that cannot be owned (cross-namespace or
	// cluster-scoped), so that they are removed when the parent is deleted.
	Finalizer = "metacel.dev/cleanup"
)

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
