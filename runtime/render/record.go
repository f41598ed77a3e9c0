package render

import (
	"fmt"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"

	"metacel.dev/metacel/runtime/contract"
)

// A child that has an ownerReference to its parent is the parent's by that reference: garbage
// collection deletes it with the parent, and it never needs the cleanup finalizer. The others
// (cross-namespace, cluster-scoped, Orphan) are found by the parent's labels, which anyone may
// give an object, with metacel's field manager name, which anyone may use. So which of them are
// the parent's is what metacel recorded on the parent when it wrote them: their UIDs, in the
// parent's metacel.dev/children annotation. An object the record does not name is not the
// parent's child: it is neither bound, deleted, released nor waited for, and never makes the
// parent take the cleanup finalizer; an object of a desired child's name that a create finds is
// still taken over when metacel applied it (the runtime's create path), and recorded then.
//
// A parent that carries the cleanup finalizer but no record was synced by a runtime before
// records: every object in reach is taken as before, and recorded by the next sync. A parent with
// neither has no such child. Offline (`metacel render`, `metacel test`), the files say nothing
// of who wrote what, and every object in reach may be a child (ChildRecord with Checked false).

// ChildRecord is what a parent records of its children without an ownerReference to it.
type ChildRecord struct {
	// Checked: the objects come from the cluster, and the record decides (the runtime, `metacel
	// plan`); false takes every object (offline files).
	Checked bool
	parent  *unstructured.Unstructured
	uids    map[types.UID]bool
	known   bool // the parent has the annotation
}

// RecordOf reads a parent's record; checked says whether it decides (ChildRecord.Checked).
func RecordOf(parent *unstructured.Unstructured, checked bool) ChildRecord {
	r := ChildRecord{Checked: checked, parent: parent}
	value, ok := parent.GetAnnotations()[contract.AnnotationChildren]
	if !ok {
		return r
	}
	r.known, r.uids = true, map[types.UID]bool{}
	for uid := range strings.SplitSeq(value, ",") {
		if uid = strings.TrimSpace(uid); uid != "" {
			r.uids[types.UID(uid)] = true
		}
	}
	return r
}

// NotRecordedReason says why obj, an object that carries the parent's labels, is not its child
// by the parent's record, or "" when it may be.
func (r ChildRecord) NotRecordedReason(obj *unstructured.Unstructured) string {
	switch {
	case !r.Checked || HasOwnerReference(obj, r.parent):
		return ""
	case r.known && r.uids[obj.GetUID()]:
		return ""
	case !r.known && slices.Contains(r.parent.GetFinalizers(), contract.Finalizer):
		return "" // synced before records: recorded by this sync
	}
	return fmt.Sprintf("metacel did not write it for this %s (its UID is not in the parent's %s annotation)", r.parent.GetKind(), contract.AnnotationChildren)
}

// HasOwnerReference reports whether obj has an ownerReference to parent: garbage collection
// deletes it with the parent.
func HasOwnerReference(obj, parent *unstructured.Unstructured) bool {
	for _, ref := range obj.GetOwnerReferences() {
		if ref.UID == parent.GetUID() {
			return true
		}
	}
	return false
}

// RecordValue is the value of a parent's metacel.dev/children annotation that records the
// objects given without an ownerReference to it: their UIDs, sorted, comma-separated.
func RecordValue(parent *unstructured.Unstructured, objs []*unstructured.Unstructured) string {
	var uids []string
	for _, o := range objs {
		if !HasOwnerReference(o, parent) && o.GetUID() != "" {
			uids = append(uids, string(o.GetUID()))
		}
	}
	slices.Sort(uids)
	return strings.Join(slices.Compact(uids), ",")
}

// Renewed is the value of the parent's record that names objs (RecordValue), and whether it
// differs from what the parent records now (Records): the annotation a sync writes, when it must.
func (r ChildRecord) Renewed(objs []*unstructured.Unstructured) (value string, changed bool) {
	value = RecordValue(r.parent, objs)
	return value, !r.Records(value)
}

// Records reports whether the parent's record already says value (RecordValue); no record at all
// says "".
func (r ChildRecord) Records(value string) bool {
	if !r.known {
		return value == ""
	}
	return r.parent.GetAnnotations()[contract.AnnotationChildren] == value
}
