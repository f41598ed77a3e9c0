package contract

// The keys metacel writes on parents.
const (
	// AnnotationChildren lists, on a parent, the UIDs of its children that garbage collection
	// does not remove with it (no ownerReference to it: cross-namespace, cluster-scoped and
	// Orphan ones), comma-separated: the children metacel wrote for it (render.ChildRecord).
	AnnotationChildren = "metacel.dev/children"
	// Finalizer is set on parents with children that cannot be owned (cross-namespace or
	// cluster-scoped), so that they are removed when the parent is deleted, and on parents whose
	// children have an order, so that they are deleted in the reverse of it.
	Finalizer = "metacel.dev/cleanup"
)

// The types of the conditions metacel writes in every parent's status.
const (
	// ConditionSynced says whether the last sync applied what the policy wants.
	ConditionSynced = "Synced"
	// ConditionReady says whether every child exists and passes its readyWhen.
	ConditionReady = "Ready"
)

// MaxConditions is the most conditions a parent's status holds in the CRD parentSchema declares
// (status.conditions' maxItems), Synced and Ready included.
const MaxConditions = 16

// MaxConditionMessage is the longest message of a condition, in bytes: metav1.Condition's, and
// the parent CRD's that parentSchema declares.
const MaxConditionMessage = 32768

// The reasons of a successful sync's conditions.
const (
	// ReasonSynced: Synced is True, every desired child was applied.
	ReasonSynced = "Synced"
	// ReasonReady: Ready is True, every child exists and is ready: it passes its readyWhen, or,
	// with none, its kind says so (runtime/readiness).
	ReasonReady = "ChildrenReady"
	// ReasonNotReady: Ready is False, some children are missing or not ready yet.
	ReasonNotReady = "ChildrenNotReady"
	// ReasonReadyWhenFailed: Ready is False, a child's readyWhen failed to evaluate (Ready only:
	// the sync itself succeeded).
	ReasonReadyWhenFailed = "ReadyWhenFailed"
	// ReasonChildFailed: a child its kind judges failed (a Job past its backoff limit or
	// deadline, a Deployment past its progress deadline): it will not become ready by waiting.
	ReasonChildFailed = "ChildFailed"
	// ReasonNoChildIncluded: Ready is False, no child of the parent is included (each entry's
	// includeWhen is false, or its forEach gave nothing) and the policy has no spec.readyWhen.
	ReasonNoChildIncluded = "NoChildIncluded"
	// ReasonParentNotReady: Ready is False, the policy's spec.readyWhen is not true.
	ReasonParentNotReady = "ParentNotReady"
	// ReasonDeletionBlocked: Ready is False, the parent is being deleted and a child being
	// deleted for longer than the deletion deadline holds up the deletion of the others (they
	// go in the reverse of the order they are applied in); the message names it and since when.
	ReasonDeletionBlocked = "DeletionBlocked"
)

// The reasons of a failed sync: Synced and Ready are both False with the reason (Ready's message
// starts "not synced: "), and the Warning event recorded on the parent when the condition is new
// has it too.
const (
	// ReasonValidationFailed: a validation of the policy rejected the parent.
	ReasonValidationFailed = "ValidationFailed"
	// ReasonEvaluationError: an expression failed to evaluate; also the reason of a failure that
	// gives no reason of its own.
	ReasonEvaluationError = "EvaluationError"
	// ReasonInvalidChild: a rendered child is not a valid object of its kind, or sets what the
	// runtime owns.
	ReasonInvalidChild = "InvalidChild"
	// ReasonNamespaceNotAllowed: the sync would read or write in a namespace the policy's
	// confinement does not let the parent reach.
	ReasonNamespaceNotAllowed = "NamespaceNotAllowed"
	// ReasonApplyFailed: the API server refused a write of a child, or would (a change it does
	// not allow, found before the write).
	ReasonApplyFailed = "ApplyFailed"
	// ReasonChildConflict: an object with a child's name exists that metacel does not manage for
	// this parent; it is never taken over.
	ReasonChildConflict = "ChildConflict"
	// ReasonDriftConflict: another writer keeps undoing metacel's writes of a child.
	ReasonDriftConflict = "DriftConflict"
	// ReasonChildKeepsDisappearing: a child keeps being deleted by someone else than metacel.
	ReasonChildKeepsDisappearing = "ChildKeepsDisappearing"
	// ReasonForbidden: the policy's ServiceAccount may not read an object the sync needs.
	ReasonForbidden = "Forbidden"
	// ReasonAccessUnchecked: whether the policy's ServiceAccount may read an object the sync
	// needs could not be found out.
	ReasonAccessUnchecked = "AccessUnchecked"
)

// The reasons of the Warning events metacel records on parents, besides those of a failed sync.
const (
	// ReasonStatusFailed: the write of the parent's status failed.
	ReasonStatusFailed = "StatusFailed"
	// ReasonChildOutOfReach: an object that carries the parent's labels is in a namespace the
	// parent's children may not be in (render.ChildReach): it is no child, and is left alone.
	ReasonChildOutOfReach = "ChildOutOfReach"
	// ReasonChildNotRecorded: an object that carries the parent's labels has no ownerReference to
	// it, is no desired child, and the parent's record (AnnotationChildren) does not name it:
	// metacel did not write it for the parent, and leaves it alone.
	ReasonChildNotRecorded = "ChildNotRecorded"
)

// AnnotationKeptPrefix starts the annotation that a parent converted from another version keeps
// that version's fields in, when the version it is converted to cannot hold them
// (parentSchema.versions[].toHub.keep, fromHub.keep): metacel.dev/kept-<version>, a JSON object of
// the fields by path. Converting the parent back to that version puts them back.
const AnnotationKeptPrefix = "metacel.dev/kept-"
