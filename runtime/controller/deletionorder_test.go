package controller

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	clienttesting "k8s.io/client-go/testing"

	"metacel.dev/metacel/runtime/contract"
)

// orderedPolicy makes two Secrets: app reads children.db, so it is applied after db, and
// deleted before it.
const orderedPolicy = `apiVersion: metacel.dev/v1alpha1
kind: CompositePolicy
metadata: {name: copy}
spec:
  parentResource: {apiVersion: v1, resource: configmaps}
  childResources:
    - {apiVersion: v1, resource: secrets}
  children:
    - id: db
      template: {apiVersion: v1, kind: Secret, metadata: {name: "${parent.metadata.name}-db"}}
    - id: app
      template: {apiVersion: v1, kind: Secret, metadata: {name: "${parent.metadata.name}-app"}, stringData: {db: "${children.db.metadata.name}"}}
`

// orderedChild is the parent p-1's Secret of child id, owned by it, deleting since when not "".
func orderedChild(t *testing.T, id, deleting string) *unstructured.Unstructured {
	t.Helper()
	obj := objectFrom(t, `{apiVersion: v1, kind: Secret, metadata: {name: p-`+id+`, namespace: ns, uid: s-`+id+`,
  ownerReferences: [{apiVersion: v1, kind: ConfigMap, name: p, uid: p-1, controller: true}],
  labels: {app.kubernetes.io/managed-by: metacel, metacel.dev/policy: copy, metacel.dev/parent-uid: p-1, metacel.dev/child-id: `+id+`}, `+appliedByMetacel+`}}`)
	if deleting != "" {
		obj.Object["metadata"].(map[string]any)["deletionTimestamp"] = deleting
		obj.SetFinalizers([]string{"example.com/slow"})
	}
	return obj
}

// deletes lists the names of the objects the client was asked to delete, in order.
func (h *harness) deletes() []string {
	var out []string
	for _, a := range h.client.Actions() {
		if d, ok := a.(clienttesting.DeleteAction); ok {
			out = append(out, d.GetName())
		}
	}
	return out
}

const deletedParent = `{apiVersion: v1, kind: ConfigMap, metadata: {name: p, namespace: ns, uid: p-1, deletionTimestamp: "2026-11-23T12:00:00Z", finalizers: [metacel.dev/cleanup]}}`

func TestADeletedParentsChildrenGoInReverseOrder(t *testing.T) {
	h := newHarness(t, orderedPolicy)
	parent := objectFrom(t, deletedParent)
	h.store(t, configmapsGVR, parent)
	h.cacheParent(t, parent)
	db, app := orderedChild(t, "db", ""), orderedChild(t, "app", "")
	for _, c := range []*unstructured.Unstructured{db, app} {
		h.store(t, secretsGVR, c)
		h.cacheChild(t, c)
	}
	steps := []struct {
		name string
		gone *unstructured.Unstructured // taken out of the cache before the sync
		want string                     // the writes of the sync
		dels []string
	}{
		{"the child that reads the other is deleted first", nil, "delete secrets", []string{"p-app"}},
		{"the child it read is deleted once it is gone", app, "delete secrets", []string{"p-db"}},
		{"the finalizer goes once both are gone", db, "patch configmaps", nil},
	}
	for _, st := range steps {
		if st.gone != nil {
			if err := h.c.caches.children[secretsGVR.String()].Whole().GetIndexer().Delete(cached(t, st.gone)); err != nil {
				t.Fatal(err)
			}
		}
		h.client.ClearActions()
		if err := h.c.syncer.sync(t.Context(), "ns/p"); err != nil {
			t.Fatalf("%s: %v", st.name, err)
		}
		if w := strings.Join(h.writes(), ","); w != st.want || !slices.Equal(h.deletes(), st.dels) {
			t.Errorf("%s: wrote %s, deleted %v; want %s, %v", st.name, w, h.deletes(), st.want, st.dels)
		}
	}
}

func TestADeletedParentWithOrphanPropagationLeavesItsOwnedChildren(t *testing.T) {
	h := newHarness(t, orderedPolicy)
	parent := objectFrom(t, `{apiVersion: v1, kind: ConfigMap, metadata: {name: p, namespace: ns, uid: p-1, deletionTimestamp: "2026-11-23T12:00:00Z", finalizers: [metacel.dev/cleanup, orphan]}}`)
	h.store(t, configmapsGVR, parent)
	h.cacheParent(t, parent)
	for _, c := range []*unstructured.Unstructured{orderedChild(t, "db", ""), orderedChild(t, "app", "")} {
		h.store(t, secretsGVR, c)
		h.cacheChild(t, c)
	}
	if err := h.c.syncer.sync(t.Context(), "ns/p"); err != nil {
		t.Fatal(err)
	}
	if w := strings.Join(h.writes(), ","); w != "patch configmaps" {
		t.Errorf("wrote %s, want only the finalizer removed (the garbage collector orphans the children)", w)
	}
}

func TestAChildThatHoldsUpADeletionIsWaitedForUntilTheDeadline(t *testing.T) {
	tests := []struct {
		name      string
		since     time.Duration // how long app has been deleting
		wantEvent bool          // DeletionBlocked
	}{
		{"before the deadline the parent is synced again at it", time.Minute, false},
		{"past the deadline the parent says which child holds it up", DeletionDeadline + time.Minute, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, orderedPolicy)
			var requeued []time.Duration
			h.c.cleanup.requeueAfter = func(_ string, d time.Duration) { requeued = append(requeued, d) }
			parent := objectFrom(t, deletedParent)
			h.store(t, configmapsGVR, parent)
			h.cacheParent(t, parent)
			since := time.Now().Add(-tc.since).UTC().Format(time.RFC3339)
			for _, c := range []*unstructured.Unstructured{orderedChild(t, "db", ""), orderedChild(t, "app", since)} {
				h.store(t, secretsGVR, c)
				h.cacheChild(t, c)
			}
			if err := h.c.syncer.sync(t.Context(), "ns/p"); err != nil {
				t.Fatal(err)
			}
			if w := h.writes(); len(w) != 0 {
				t.Errorf("wrote %v, want nothing: db waits for app, which is going", w)
			}
			blocked := false
			for len(h.recorder.Events) > 0 {
				e := <-h.recorder.Events
				blocked = blocked || strings.Contains(e, "DeletionBlocked") && strings.Contains(e, "Secret ns/p-app") && strings.Contains(e, "example.com/slow")
			}
			if blocked != tc.wantEvent {
				t.Errorf("DeletionBlocked naming p-app and its finalizer: %v, want %v", blocked, tc.wantEvent)
			}
			if want := DeletionDeadline - tc.since; !tc.wantEvent && (len(requeued) != 1 || requeued[0] > want || requeued[0] < want-time.Minute) {
				t.Errorf("requeued after %v, want once, at the deadline (%v)", requeued, want)
			}
		})
	}
}

func TestAParentWhoseChildrenHaveAnOrderCarriesTheFinalizer(t *testing.T) {
	h := newHarness(t, orderedPolicy)
	parent := objectFrom(t, `{apiVersion: v1, kind: ConfigMap, metadata: {name: p, namespace: ns, uid: p-1}}`)
	h.store(t, configmapsGVR, parent)
	h.cacheParent(t, parent)
	if err := h.c.syncer.sync(t.Context(), "ns/p"); err != nil {
		t.Fatal(err)
	}
	got, err := h.client.Tracker().Get(configmapsGVR, "ns", "p")
	if err != nil {
		t.Fatal(err)
	}
	if fin := got.(metav1.Object).GetFinalizers(); !slices.Contains(fin, "metacel.dev/cleanup") {
		t.Errorf("finalizers %v, want metacel.dev/cleanup", fin)
	}
}

func TestOfSeveralChildrenHoldingUpADeletionTheOneDeletedFirstIsNamed(t *testing.T) {
	first, later, staying := orderedChild(t, "a", "2026-11-20T00:00:00Z"), orderedChild(t, "b", "2026-11-21T00:00:00Z"), orderedChild(t, "c", "")
	tests := []struct {
		name             string
		holding, blocker *unstructured.Unstructured
		want             *unstructured.Unstructured
	}{
		{"the first blocker being deleted", nil, later, later},
		{"a blocker deleted earlier", later, first, first},
		{"a blocker deleted later", first, later, first},
		{"a blocker not being deleted yet", nil, staying, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := firstDeleted(tt.holding, tt.blocker); got != tt.want {
				t.Errorf("firstDeleted = %v, want %v", got, tt.want)
			}
		})
	}
}

// switchedOff's children are both left out while the Widget's color is not "on": app, which reads
// db, goes first.
const switchedOff = `apiVersion: metacel.dev/v1alpha1
kind: CompositePolicy
metadata: {name: copy}
spec:
  parentResource: {apiVersion: e2e.metacel.dev/v1, resource: widgets}
  childResources:
    - {apiVersion: v1, resource: configmaps}
  children:
    - id: app
      includeWhen: "parent.spec.color == 'on'"
      template: {apiVersion: v1, kind: ConfigMap, metadata: {name: w-app}, data: {db: "${children.db.metadata.name}"}}
    - id: db
      includeWhen: "parent.spec.color == 'on'"
      template: {apiVersion: v1, kind: ConfigMap, metadata: {name: w-db}}
`

// Children no longer desired of a parent that stays: while the one that goes first is being
// deleted, the other waits; past the deadline the parent's Ready condition names the one that
// holds it up, as a deleted parent's does.
func TestAChildNoLongerDesiredThatHoldsUpAnotherIsNamedPastTheDeadline(t *testing.T) {
	tests := []struct {
		name       string
		since      time.Duration // how long app has been deleting
		wantReason string        // of the Ready condition written
	}{
		{"before the deadline the parent is synced again at it", time.Minute, contract.ReasonNoChildIncluded},
		{"past the deadline the parent says which child holds it up", DeletionDeadline + time.Minute, contract.ReasonDeletionBlocked},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, switchedOff, widgetCRD)
			var requeued []time.Duration
			h.c.syncer.requeueAfter = func(_ string, d time.Duration) { requeued = append(requeued, d) }
			w := objectFrom(t, `{apiVersion: e2e.metacel.dev/v1, kind: Widget, metadata: {name: w, namespace: ns, uid: w-1, generation: 1, finalizers: [metacel.dev/cleanup]}, spec: {color: off}}`)
			h.store(t, widgetsGVR, w)
			h.cacheParent(t, w)
			sent := statusWrites(h, nil)
			cacheAppDeletingAndDB(t, h, tc.since)
			if err := h.c.syncer.sync(t.Context(), "ns/w"); err != nil {
				t.Fatal(err)
			}
			if len(h.deletes()) != 0 {
				t.Errorf("deleted %v, want nothing: db waits for app, which is going", h.deletes())
			}
			if len(*sent) != 1 {
				t.Fatalf("status writes %v, want one", *sent)
			}
			var ready map[string]any
			for _, c := range (*sent)[0]["conditions"].([]any) {
				if m := c.(map[string]any); m["type"] == "Ready" {
					ready = m
				}
			}
			if ready["reason"] != tc.wantReason {
				t.Errorf("Ready %v, want reason %s", ready, tc.wantReason)
			}
			if tc.wantReason == contract.ReasonDeletionBlocked && !strings.Contains(ready["message"].(string), "ConfigMap ns/w-app") {
				t.Errorf("Ready message %q does not name the ConfigMap that holds the deletion up", ready["message"])
			}
			if want := DeletionDeadline - tc.since; tc.wantReason != contract.ReasonDeletionBlocked && (len(requeued) != 1 || requeued[0] > want || requeued[0] < want-time.Minute) {
				t.Errorf("requeued after %v, want once, at the deadline (%v)", requeued, want)
			}
		})
	}
}

// A sync whose deletions wait for a child being deleted asks to be synced again at the deadline;
// that sync renders, though nothing changed in the cluster meanwhile (the child is stuck), so it
// must not be skipped as one whose inputs the last sync remembered: Ready would never say
// DeletionBlocked.
func TestASyncHeldUpByADeletionRendersAgainAtTheDeadline(t *testing.T) {
	h := newHarness(t, switchedOff, widgetCRD)
	var requeued []time.Duration
	h.c.syncer.requeueAfter = func(_ string, d time.Duration) { requeued = append(requeued, d) }
	w := objectFrom(t, `{apiVersion: e2e.metacel.dev/v1, kind: Widget, metadata: {name: w, namespace: ns, uid: w-1, generation: 1, resourceVersion: "1", finalizers: [metacel.dev/cleanup]}, spec: {color: off}}`)
	h.store(t, widgetsGVR, w)
	h.cacheParent(t, w)
	written := w.DeepCopy() // the parent as the status write leaves it, which the cache then holds
	h.react("patch", "widgets", func(a clienttesting.Action) (bool, runtime.Object, error) {
		if a.GetSubresource() != "status" {
			return false, nil, nil
		}
		var patch map[string]any
		_ = json.Unmarshal(a.(clienttesting.PatchAction).GetPatch(), &patch)
		written.Object["status"] = patch["status"]
		written.SetResourceVersion("2")
		return true, written.DeepCopy(), nil
	})
	cacheAppDeletingAndDB(t, h, time.Minute)
	if err := h.c.syncer.sync(t.Context(), "ns/w"); err != nil {
		t.Fatal(err)
	}
	h.cacheParent(t, written)
	for range 2 { // the status write's event, then the requeue at the deadline
		if err := h.c.syncer.sync(t.Context(), "ns/w"); err != nil {
			t.Fatal(err)
		}
	}
	if len(requeued) != 3 {
		t.Errorf("requeued %v, want at each sync: the sync at the deadline rendered and was held up again", requeued)
	}
}

// cacheAppDeletingAndDB stores and caches widget w's two children no longer desired: app, being
// deleting for since (a finalizer holds it), and db, which waits for it.
func cacheAppDeletingAndDB(t *testing.T, h *harness, since time.Duration) {
	t.Helper()
	deletingSince := time.Now().Add(-since).UTC().Format(time.RFC3339)
	for id, deleting := range map[string]string{"app": deletingSince, "db": ""} {
		c := objectFrom(t, `{apiVersion: v1, kind: ConfigMap, metadata: {name: w-`+id+`, namespace: ns, uid: c-`+id+`, resourceVersion: "1",
  ownerReferences: [{apiVersion: e2e.metacel.dev/v1, kind: Widget, name: w, uid: w-1, controller: true}],
  labels: {app.kubernetes.io/managed-by: metacel, metacel.dev/policy: copy, metacel.dev/parent-uid: w-1, metacel.dev/child-id: `+id+`}, `+appliedByMetacel+`}}`)
		if deleting != "" {
			c.Object["metadata"].(map[string]any)["deletionTimestamp"] = deleting
			c.SetFinalizers([]string{"example.com/slow"})
		}
		h.store(t, configmapsGVR, c)
		h.cacheChild(t, c)
	}
}
