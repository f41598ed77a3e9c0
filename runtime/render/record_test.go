package render

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"

	"metacel.dev/metacel/runtime/contract"
)

func TestAParentsRecordDecidesWhichObjectsWithoutAnOwnerReferenceAreItsChildren(t *testing.T) {
	parentWith := func(annotations map[string]string, finalizers ...string) *unstructured.Unstructured {
		p := &unstructured.Unstructured{}
		p.SetKind("Widget")
		p.SetUID("p-1")
		p.SetAnnotations(annotations)
		p.SetFinalizers(finalizers)
		return p
	}
	object := func(uid string, ownedBy string) *unstructured.Unstructured {
		o := &unstructured.Unstructured{}
		o.SetUID(types.UID(uid))
		if ownedBy != "" {
			o.SetOwnerReferences([]metav1.OwnerReference{{UID: types.UID(ownedBy), Name: "p"}})
		}
		return o
	}
	tests := []struct {
		name    string
		parent  *unstructured.Unstructured
		checked bool
		obj     *unstructured.Unstructured
		child   bool
	}{
		{"offline files: every object", parentWith(nil), false, object("s-1", ""), true},
		{"an object owned by the parent: garbage collection's", parentWith(map[string]string{contract.AnnotationChildren: ""}), true, object("s-1", "p-1"), true},
		{"recorded", parentWith(map[string]string{contract.AnnotationChildren: "s-0, s-1"}), true, object("s-1", ""), true},
		{"not recorded", parentWith(map[string]string{contract.AnnotationChildren: "s-0"}), true, object("s-1", ""), false},
		{"an empty record names nothing", parentWith(map[string]string{contract.AnnotationChildren: ""}, contract.Finalizer), true, object("s-1", ""), false},
		{"no record, the finalizer: synced before records", parentWith(nil, contract.Finalizer), true, object("s-1", ""), true},
		{"no record, no finalizer: metacel wrote no such child", parentWith(nil), true, object("s-1", ""), false},
		{"owned by another parent, not recorded", parentWith(map[string]string{contract.AnnotationChildren: ""}), true, object("s-1", "p-2"), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			why := RecordOf(tt.parent, tt.checked).NotRecordedReason(tt.obj)
			if (why == "") != tt.child {
				t.Errorf("NotRecordedReason %q, want a child: %v", why, tt.child)
			}
		})
	}
}

func TestARecordListsTheUIDsOfTheObjectsWithoutAnOwnerReferenceSorted(t *testing.T) {
	parent := &unstructured.Unstructured{}
	parent.SetUID("p-1")
	var objs []*unstructured.Unstructured
	for _, uid := range []string{"b", "a", "", "b", "owned"} {
		o := &unstructured.Unstructured{}
		o.SetUID(types.UID(uid))
		if uid == "owned" {
			o.SetOwnerReferences([]metav1.OwnerReference{{UID: "p-1"}})
		}
		objs = append(objs, o)
	}
	if got := RecordValue(parent, objs); got != "a,b" {
		t.Errorf("RecordValue %q, want a,b", got)
	}
	if !RecordOf(parent, true).Records("") || RecordOf(parent, true).Records("a") {
		t.Error("no record must read as the empty record, and only as it")
	}
	if value, changed := RecordOf(parent, true).Renewed(objs); value != "a,b" || !changed {
		t.Errorf("Renewed without a record: %q, %v; want a,b, true", value, changed)
	}
	parent.SetAnnotations(map[string]string{"metacel.dev/children": "a,b"})
	if value, changed := RecordOf(parent, true).Renewed(objs); value != "a,b" || changed {
		t.Errorf("Renewed with the record: %q, %v; want a,b, false", value, changed)
	}
}
