package controller

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"

	"metacel.dev/metacel/runtime/apply"
	"metacel.dev/metacel/runtime/render"
)

func TestChildOf(t *testing.T) {
	parent := &unstructured.Unstructured{}
	parent.SetUID("p-1")
	object := func(labels map[string]string, ownerUID types.UID, appliedByMetacel bool) *unstructured.Unstructured {
		o := &unstructured.Unstructured{}
		o.SetLabels(labels)
		if ownerUID != "" {
			o.SetOwnerReferences([]metav1.OwnerReference{{UID: ownerUID, Controller: ptrTo(true)}})
		}
		if appliedByMetacel {
			o.SetManagedFields([]metav1.ManagedFieldsEntry{{Manager: apply.FieldManager, Operation: metav1.ManagedFieldsOperationApply,
				FieldsType: "FieldsV1", FieldsV1: metav1.NewFieldsV1(`{"f:data":{}}`)}})
		}
		return o
	}
	ours := map[string]string{render.LabelPolicy: "p", render.LabelChildID: "cm"}
	tests := []struct {
		name string
		obj  *unstructured.Unstructured
		want bool
	}{
		{"its parent-uid label names the parent", object(map[string]string{render.LabelParentUID: "p-1"}, "", true), true},
		{"its parent-uid label names the parent but metacel never applied it", object(map[string]string{render.LabelParentUID: "p-1"}, "", false), false},
		{"its parent-uid label names another parent", object(map[string]string{render.LabelParentUID: "p-2"}, "p-1", true), false},
		{"label removed, controller ownerReference to the parent", object(nil, "p-1", true), true},
		{"a controller ownerReference to the parent set by hand", object(nil, "p-1", false), false},
		{"label removed, controller ownerReference to another", object(ours, "p-2", true), false},
		{"label removed, no ownerReference, metacel's labels and managed fields", object(ours, "", true), true},
		{"metacel's labels but applied by someone else", object(ours, "", false), false},
		{"another child id", object(map[string]string{render.LabelPolicy: "p", render.LabelChildID: "other"}, "", true), false},
		{"an unrelated object", object(nil, "", false), false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := childOf(tc.obj, parent, "p", "cm"); got != tc.want {
				t.Errorf("childOf = %v, want %v", got, tc.want)
			}
		})
	}
}

func ptrTo[T any](v T) *T { return &v }
