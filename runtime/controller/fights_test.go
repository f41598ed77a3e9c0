package controller

import (
	"errors"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	clienttesting "k8s.io/client-go/testing"
)

func TestAFightOverAChildIsReportedAndBackedOffFrom(t *testing.T) {
	tests := []struct {
		name       string
		observed   bool // the child exists, changed by another writer; else it was deleted again
		wantReason string
		wantSays   string
	}{
		{"another writer keeps changing a field", true, ReasonDriftConflict, `field manager "hpa"`},
		{"something keeps deleting the child", false, ReasonChildKeepsDisappearing, "was deleted 5 times"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, copyPolicy)
			written := func(clienttesting.Action) (bool, runtime.Object, error) {
				return true, &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "Secret"}}, nil
			}
			h.react("create", "secrets", written)
			h.react("patch", "secrets", written)
			h.cacheParent(t, objectFrom(t, `{apiVersion: v1, kind: ConfigMap, metadata: {name: p, namespace: ns, uid: p-1}, data: {a: "x"}}`))
			if tc.observed {
				// as the other writer leaves it after each revert: its data differs from the policy's
				h.cacheChild(t, objectFrom(t, `{apiVersion: v1, kind: Secret, metadata: {name: p-copy, namespace: ns, uid: s-1,
  ownerReferences: [{apiVersion: v1, kind: ConfigMap, name: p, uid: p-1, controller: true}],
  labels: {app.kubernetes.io/managed-by: metacel, metacel.dev/policy: copy, metacel.dev/parent-uid: p-1, metacel.dev/child-id: copy},
  managedFields: [
    {manager: metacel, operation: Apply, fieldsType: FieldsV1, fieldsV1: {"f:stringData": {"f:a": {}}}},
    {manager: hpa, operation: Update, time: "2026-11-23T12:00:00Z", fieldsType: FieldsV1, fieldsV1: {"f:stringData": {"f:a": {}}}}]},
  stringData: {a: "changed"}}`))
			}
			var last error
			for range 10 { // every child event: the other writer undid metacel's write
				last = h.c.sync(t.Context(), "ns/p")
			}
			if n := countOf(h.writes(), "patch secrets") + countOf(h.writes(), "create secrets"); n != 1+fightLimit {
				t.Errorf("%d writes of the child, want %d: the first, then %d reverts, then none", n, 1+fightLimit, fightLimit)
			}
			var se *syncError
			if !errors.As(last, &se) || se.reason != tc.wantReason || !se.retry || !strings.Contains(se.Error(), tc.wantSays) {
				t.Errorf("last sync: %v, want a retried %s saying %q", last, tc.wantReason, tc.wantSays)
			}
		})
	}
}

// typedPolicy makes a Secret whose type is the parent's data.a.
var typedPolicy = secretsPolicy(secretChild(`type: "${parent.data.a}"`))

func TestChildEventsAreSpacedUntilASyncSettles(t *testing.T) {
	h := newHarness(t, typedPolicy)
	h.cacheParent(t, objectFrom(t, `{apiVersion: v1, kind: ConfigMap, metadata: {name: p, namespace: ns, uid: p-1}, data: {a: "x"}}`))
	child := objectFrom(t, `{apiVersion: v1, kind: Secret, metadata: {name: p-copy, namespace: ns, labels: {metacel.dev/policy: copy, metacel.dev/parent-uid: p-1}}}`)
	handler := h.c.childHandler()
	for range 3 {
		handler.OnUpdate(child, child)
	}
	// each event routes the old and the new object: 6 requeues, each waiting twice as long
	if n := h.c.childEvents.NumRequeues("ns/p"); n != 6 {
		t.Errorf("%d spaced requeues, want 6", n)
	}
	if d := h.c.childEvents.When("ns/p"); d < 300*time.Millisecond {
		t.Errorf("the next child event waits %s, want the doubled backoff (320ms)", d)
	}
	var created *unstructured.Unstructured
	h.react("create", "secrets", func(a clienttesting.Action) (bool, runtime.Object, error) {
		created = a.(clienttesting.CreateAction).GetObject().(*unstructured.Unstructured).DeepCopy()
		return true, created, nil
	})
	_ = h.c.sync(t.Context(), "ns/p") // creates the child: not settled
	// as the cache then sees it: created by metacel (an Update entry)
	created.SetUID("s-1")
	created.SetManagedFields([]metav1.ManagedFieldsEntry{{Manager: "metacel", Operation: metav1.ManagedFieldsOperationUpdate,
		FieldsType: "FieldsV1", FieldsV1: metav1.NewFieldsV1(`{"f:type": {}}`)}})
	h.cacheChild(t, created)
	_ = h.c.sync(t.Context(), "ns/p") // writes nothing: settled
	if n := h.c.childEvents.NumRequeues("ns/p"); n != 0 {
		t.Errorf("%d spaced requeues after a sync that wrote nothing, want 0", n)
	}
}

func TestAChildMetacelCreatedIsTakenOverByItsFirstApply(t *testing.T) {
	h := newHarness(t, typedPolicy)
	h.cacheParent(t, objectFrom(t, `{apiVersion: v1, kind: ConfigMap, metadata: {name: p, namespace: ns, uid: p-1}, data: {a: "new"}}`))
	// created (POST) with type "old": metacel's fields are in an Update entry
	created := objectFrom(t, `{apiVersion: v1, kind: Secret, metadata: {name: p-copy, namespace: ns, uid: s-1, resourceVersion: "7",
  ownerReferences: [{apiVersion: v1, kind: ConfigMap, name: p, uid: p-1, controller: true, blockOwnerDeletion: true}],
  labels: {app.kubernetes.io/managed-by: metacel, metacel.dev/policy: copy, metacel.dev/parent-uid: p-1, metacel.dev/child-id: copy},
  managedFields: [{manager: metacel, operation: Update, apiVersion: v1, fieldsType: FieldsV1, fieldsV1: {"f:type": {}}}]},
  type: "old"}`)
	h.store(t, secretsGVR, created)
	h.cacheChild(t, created)
	var patches []string
	h.react("patch", "secrets", func(a clienttesting.Action) (bool, runtime.Object, error) {
		patches = append(patches, string(a.(clienttesting.PatchAction).GetPatchType()))
		return true, created, nil
	})
	if err := h.c.sync(t.Context(), "ns/p"); err != nil {
		t.Fatal(err)
	}
	if strings.Join(patches, ",") != "application/json-patch+json,application/apply-patch+yaml" {
		t.Errorf("patches %v: want the created fields moved to metacel's Apply entry, then the apply", patches)
	}
}

// A child of an informer's first list queues its parent at once, so that every parent is queued
// before the workers start; a later child event is spaced (TestChildEventsAreSpacedUntilASyncSettles).
// Spaced too, the first list's children came back after their parents' syncs and synced them
// again: 1,292-2,000 syncs in a restart over 1,000 converged parents.
func TestAChildOfTheFirstListQueuesItsParentAtOnce(t *testing.T) {
	for _, tc := range []struct {
		name   string
		listed bool
		queued int
	}{
		{"a child of the first list: its parent queued at once", true, 1},
		{"a child added later: its parent queued after the spacing", false, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, typedPolicy)
			h.cacheParent(t, objectFrom(t, `{apiVersion: v1, kind: ConfigMap, metadata: {name: p, namespace: ns, uid: p-1}, data: {a: "x"}}`))
			child := objectFrom(t, `{apiVersion: v1, kind: Secret, metadata: {name: p-copy, namespace: ns, labels: {metacel.dev/policy: copy, metacel.dev/parent-uid: p-1}}}`)
			h.c.childHandler().OnAdd(child, tc.listed)
			if n := h.c.queue.Len(); n != tc.queued {
				t.Errorf("%d parents queued at once, want %d", n, tc.queued)
			}
		})
	}
}
