package contract

import (
	"strings"

	"k8s.io/apimachinery/pkg/labels"
)

// The labels metacel writes on every child.
const (
	// LabelManagedBy marks every child with ManagedByValue: the runtime watches children through
	// it, and it tells people and other tools that metacel manages the object. The runtime's
	// rollout records, ledger Leases, shard Leases and shard table carry it too.
	LabelManagedBy = "app.kubernetes.io/managed-by"
	// ManagedByValue is the value of LabelManagedBy on the objects metacel manages.
	ManagedByValue = "metacel"
	// LabelChildPolicyName holds, on a child, the name of the policy it belongs to. Read it
	// through ChildPolicy, which falls back on LabelChildPolicyLegacy for a child an earlier
	// runtime wrote (doc.go says when each key is written and read).
	LabelChildPolicyName = "metacel.dev/policy-name"
	// LabelChildPolicyLegacy is where runtimes before LabelChildPolicyName kept, on a child, the
	// name of its policy. Its key is LabelPolicyConfigMap's, which means something else on a
	// ConfigMap: that it holds policies (value "true"); the policy source tells them apart by
	// LabelManagedBy, and no policy may be named "true". This runtime still writes it beside
	// LabelChildPolicyName, so that the runtime of the version before, which reads only it,
	// still finds its children after a downgrade; a later one stops writing it and retires it
	// (RetiredChildLabels), never to give it another meaning on a child.
	LabelChildPolicyLegacy = "metacel.dev/policy"
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
	ChildLabels      = []string{LabelManagedBy, LabelChildPolicyName, LabelChildPolicyLegacy, LabelParentUID, LabelChildID, LabelShardSlot}
	ChildAnnotations = []string{AnnotationDeletionPolicy, AnnotationContentHash}
)

// RetiredChildLabels and RetiredChildAnnotations are the keys that earlier runtimes wrote on
// children and this one no longer writes: the patch that brings a child's bookkeeping up to date
// removes them. A key is never reused with another meaning once retired.
var (
	RetiredChildLabels      = []string{}
	RetiredChildAnnotations = []string{AnnotationDesiredHash}
)

// ChildPolicy returns the name of the policy a child belongs to, as its labels say (""
// when they do not): LabelChildPolicyName, or, on a child that an earlier runtime wrote and no
// bookkeeping patch has reached yet, LabelChildPolicyLegacy. When both are set, the new key wins.
// Labels are a map's (labels.Set) or a cached object's (informers.LabelsOf).
func ChildPolicy(l labels.Labels) string {
	_, name := ChildPolicyLabel(l)
	return name
}

// ChildPolicyLabel returns the key of the label that names a child's policy (ChildPolicy), and
// its value; "", "" when there is none.
func ChildPolicyLabel(l labels.Labels) (key, name string) {
	if v := l.Get(LabelChildPolicyName); v != "" {
		return LabelChildPolicyName, v
	}
	if v := l.Get(LabelChildPolicyLegacy); v != "" {
		return LabelChildPolicyLegacy, v
	}
	return "", ""
}

// ChildSelectors returns the label selectors whose lists, together, hold the children of a
// policy in the API server, whichever key names their policy (ChildPolicy): those of one parent
// by its UID alone (a parent's objects are few: the reader keeps its policy's), else one selector
// for each key. A reader keeps each object once (a child carries both keys) and only those
// whose ChildPolicy is the policy (a child whose keys disagree belongs to LabelChildPolicyName's).
func ChildSelectors(policy, parentUID string) []string {
	if parentUID != "" {
		return []string{LabelParentUID + "=" + parentUID}
	}
	return []string{LabelChildPolicyName + "=" + policy, LabelChildPolicyLegacy + "=" + policy}
}

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
