package controller

import (
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"

	"metacel.dev/metacel/runtime/apply"
	"metacel.dev/metacel/runtime/contract"
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
	ours := map[string]string{contract.LabelChildPolicyName: "p", contract.LabelChildPolicyLegacy: "p", contract.LabelChildID: "cm"}
	earlier := map[string]string{contract.LabelChildPolicyLegacy: "p", contract.LabelChildID: "cm"}
	later := map[string]string{contract.LabelChildPolicyName: "p", contract.LabelChildID: "cm"}
	disagreeing := map[string]string{contract.LabelChildPolicyName: "q", contract.LabelChildPolicyLegacy: "p", contract.LabelChildID: "cm"}
	tests := []struct {
		name string
		obj  *unstructured.Unstructured
		want bool
	}{
		{"its parent-uid label names the parent", object(map[string]string{contract.LabelParentUID: "p-1"}, "", true), true},
		{"its parent-uid label names the parent but metacel never applied it", object(map[string]string{contract.LabelParentUID: "p-1"}, "", false), false},
		{"its parent-uid label names another parent", object(map[string]string{contract.LabelParentUID: "p-2"}, "p-1", true), false},
		{"label removed, controller ownerReference to the parent", object(nil, "p-1", true), true},
		{"a controller ownerReference to the parent set by hand", object(nil, "p-1", false), false},
		{"label removed, controller ownerReference to another", object(ours, "p-2", true), false},
		{"label removed, no ownerReference, metacel's labels and managed fields", object(ours, "", true), true},
		{"metacel's labels but applied by someone else", object(ours, "", false), false},
		{"label removed, no ownerReference, its policy named by the legacy key alone (an earlier runtime's)", object(earlier, "", true), true},
		{"label removed, no ownerReference, its policy named by the new key alone (a later runtime's)", object(later, "", true), true},
		{"label removed, no ownerReference, the new key names another policy", object(disagreeing, "", true), false},
		{"another child id", object(map[string]string{contract.LabelChildPolicyName: "p", contract.LabelChildID: "other"}, "", true), false},
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

// A conflict the parent already reports (its Synced condition says ChildConflict: a sync
// before this one, or before a restart, found the name taken) is checked again with a read, not
// a create that the API server refuses: retried with backoff, or after a restart, it sent a POST
// each time to learn what the parent already said. A name found free again is created.
func TestAKnownConflictIsReadNotWritten(t *testing.T) {
	tests := []struct {
		name       string
		reported   string // the parent's Synced reason
		squatted   bool   // an object of the child's name, made by someone else, exists
		wantWrites string
		wantErr    bool
	}{
		{"no conflict reported: created without a read", "Synced", false, "create secrets", false},
		{"no conflict reported, the name taken: the create finds it", "Synced", true, "create secrets", true},
		{"a conflict reported, still there: read, no write", contract.ReasonChildConflict, true, "", true},
		{"a conflict reported, gone: created", contract.ReasonChildConflict, false, "create secrets", false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, typedPolicy)
			h.cacheParent(t, objectFrom(t, `{apiVersion: v1, kind: ConfigMap, metadata: {name: p, namespace: ns, uid: p-1}, data: {a: "x"},
  status: {conditions: [{type: Synced, status: "False", reason: `+tc.reported+`}]}}`))
			if tc.squatted {
				h.store(t, secretsGVR, objectFrom(t, `{apiVersion: v1, kind: Secret, metadata: {name: p-copy, namespace: ns, uid: s-1,
  managedFields: [{manager: kubectl, operation: Update, fieldsType: FieldsV1, fieldsV1: {"f:type": {}}}]}, type: "mine"}`))
			}
			err := h.c.syncer.sync(t.Context(), "ns/p")
			if got := strings.Join(h.writes(), ","); got != tc.wantWrites {
				t.Errorf("writes %q, want %q", got, tc.wantWrites)
			}
			if (err != nil) != tc.wantErr || err != nil && !isConflict(err) {
				t.Errorf("sync: %v, want a conflict: %v", err, tc.wantErr)
			}
		})
	}
}
