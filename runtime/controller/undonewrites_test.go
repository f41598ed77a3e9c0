package controller

import (
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"testing"
	"unsafe"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	clienttesting "k8s.io/client-go/testing"

	"metacel.dev/metacel/runtime/contract"
)

func TestAFightOverAChildIsReportedAndBackedOffFrom(t *testing.T) {
	tests := []struct {
		name       string
		observed   bool // the child exists, changed by another writer; else it was deleted again
		wantReason string
		wantSays   string
	}{
		{"another writer keeps changing a field", true, contract.ReasonDriftConflict, `field manager "hpa"`},
		{"something keeps deleting the child", false, contract.ReasonChildKeepsDisappearing, "was deleted 5 times"},
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
				last = h.c.syncer.sync(t.Context(), "ns/p")
			}
			if n := countOf(h.writes(), "patch secrets") + countOf(h.writes(), "create secrets"); n != 1+fightLimit {
				t.Errorf("%d writes of the child, want %d: the first, then %d reverts, then none", n, 1+fightLimit, fightLimit)
			}
			var se *syncError
			if !errors.As(last, &se) || se.reason != tc.wantReason || se.terminal || !strings.Contains(se.Error(), tc.wantSays) {
				t.Errorf("last sync: %v, want a retried %s saying %q", last, tc.wantReason, tc.wantSays)
			}
		})
	}
}

// typedPolicy makes a Secret whose type is the parent's data.a.
var typedPolicy = secretsPolicy(secretChild(`type: "${parent.data.a}"`))

// A parent's child events are spaced while its syncs write (each sync that wrote doubles the
// spacing: a fight with another writer cannot make a hot loop), however many events a write
// causes; a sync that writes nothing settles it; a child's deletion is never spaced.
func TestChildEventsAreSpacedWhileSyncsWrite(t *testing.T) {
	h := newHarness(t, typedPolicy)
	h.cacheParent(t, objectFrom(t, `{apiVersion: v1, kind: ConfigMap, metadata: {name: p, namespace: ns, uid: p-1}, data: {a: "x"}}`))
	child := objectFrom(t, `{apiVersion: v1, kind: Secret, metadata: {name: p-copy, namespace: ns, labels: {metacel.dev/policy: copy, metacel.dev/parent-uid: p-1}}}`)
	handler := h.c.childHandler()
	queued := func(what string, want int) {
		t.Helper()
		if n := h.c.queue.Len(); n != want {
			t.Errorf("%s: %d parents queued at once, want %d", what, n, want)
		}
	}
	handler.OnUpdate(child, child)
	queued("an event before any write", 1)
	h.c.queue.Get()
	h.c.queue.Done("ns/p")

	var created *unstructured.Unstructured
	h.react("create", "secrets", func(a clienttesting.Action) (bool, runtime.Object, error) {
		created = a.(clienttesting.CreateAction).GetObject().(*unstructured.Unstructured).DeepCopy()
		return true, created, nil
	})
	_ = h.c.syncer.sync(t.Context(), "ns/p") // creates the child: its events are echoes
	for range 10 {
		handler.OnUpdate(child, child)
	}
	queued("the echoes of a sync that wrote", 0)
	if d := h.c.states.childEventDelay("ns/p"); d != echoBase {
		t.Errorf("after one sync that wrote, child events wait %s, want %s however many they are", d, echoBase)
	}
	h.c.states.wroteChildren("ns/p")
	h.c.states.wroteChildren("ns/p")
	if d := h.c.states.childEventDelay("ns/p"); d != 4*echoBase {
		t.Errorf("after three syncs in a row that wrote, child events wait %s, want %s", d, 4*echoBase)
	}
	handler.OnDelete(child)
	queued("a deleted child", 1)
	h.c.queue.Get()
	h.c.queue.Done("ns/p")

	// as the cache then sees it: created by metacel (an Update entry)
	created.SetUID("s-1")
	created.SetManagedFields([]metav1.ManagedFieldsEntry{{Manager: "metacel", Operation: metav1.ManagedFieldsOperationUpdate,
		FieldsType: "FieldsV1", FieldsV1: metav1.NewFieldsV1(`{"f:type": {}}`)}})
	h.cacheChild(t, created)
	_ = h.c.syncer.sync(t.Context(), "ns/p") // writes nothing: settled
	if d := h.c.states.childEventDelay("ns/p"); d != 0 {
		t.Errorf("after a sync that wrote nothing, child events wait %s, want none", d)
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
	if err := h.c.syncer.sync(t.Context(), "ns/p"); err != nil {
		t.Fatal(err)
	}
	if strings.Join(patches, ",") != "application/json-patch+json,application/apply-patch+yaml" {
		t.Errorf("patches %v: want the created fields moved to metacel's Apply entry, then the apply", patches)
	}
}

// A child of an informer's first list queues its parent at once, so that every parent is queued
// before the workers start; a later child event is spaced (TestChildEventsAreSpacedWhileSyncsWrite).
// Spaced too, the first list's children came back after their parents' syncs and synced them
// again: 1,292-2,000 syncs in a restart over 1,000 converged parents.
func TestAChildOfTheFirstListQueuesItsParentAtOnce(t *testing.T) {
	for _, tc := range []struct {
		name   string
		listed bool
		queued int
	}{
		{"a child of the first list: its parent queued at once", true, 1},
		{"a child added later, after a sync that wrote: its parent queued after the spacing", false, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, typedPolicy)
			h.cacheParent(t, objectFrom(t, `{apiVersion: v1, kind: ConfigMap, metadata: {name: p, namespace: ns, uid: p-1}, data: {a: "x"}}`))
			child := objectFrom(t, `{apiVersion: v1, kind: Secret, metadata: {name: p-copy, namespace: ns, labels: {metacel.dev/policy: copy, metacel.dev/parent-uid: p-1}}}`)
			h.c.states.wroteChildren("ns/p")
			h.c.childHandler().OnAdd(child, tc.listed)
			if n := h.c.queue.Len(); n != tc.queued {
				t.Errorf("%d parents queued at once, want %d", n, tc.queued)
			}
		})
	}
}

// recreatePolicy makes a Secret whose type is the parent's data.a, never updated in place.
var recreatePolicy = secretsPolicyBy("Recreate", secretChild(`type: "${parent.data.a}"`))

// Only a deletion metacel did not make counts as a child disappearing: the create that follows
// metacel's own Recreate deletion is not another writer's undoing. A child of a Recreate
// resource that someone changes after each write is a drift fight, reported as one and backed
// off from like an update's (before, Recreate skipped the fight check: it deleted and created
// the child for ever, and reported its own deletions as ChildKeepsDisappearing).
func TestARecreatedChildIsNotCountedAsDisappearing(t *testing.T) {
	tests := []struct {
		name        string
		changedBy   string // who changes the child after each write; "" none (it is deleted)
		wantDeletes int
		wantReason  string
	}{
		{"someone changes a field after each recreation: a drift fight", "hpa", 1 + fightLimit, contract.ReasonDriftConflict},
		{"someone deletes the child after each creation", "", 0, contract.ReasonChildKeepsDisappearing},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, recreatePolicy)
			h.cacheParent(t, objectFrom(t, `{apiVersion: v1, kind: ConfigMap, metadata: {name: p, namespace: ns, uid: p-1}, data: {a: "x"}}`))
			h.react("create", "secrets", func(a clienttesting.Action) (bool, runtime.Object, error) {
				return true, a.(clienttesting.CreateAction).GetObject().(*unstructured.Unstructured).DeepCopy(), nil
			})
			h.react("delete", "secrets", func(clienttesting.Action) (bool, runtime.Object, error) { return true, nil, nil })
			changed := objectFrom(t, `{apiVersion: v1, kind: Secret, metadata: {name: p-copy, namespace: ns, uid: s-1,
  ownerReferences: [{apiVersion: v1, kind: ConfigMap, name: p, uid: p-1, controller: true}],
  labels: {app.kubernetes.io/managed-by: metacel, metacel.dev/policy: copy, metacel.dev/parent-uid: p-1, metacel.dev/child-id: copy},
  managedFields: [
    {manager: metacel, operation: Apply, fieldsType: FieldsV1, fieldsV1: {"f:type": {}}},
    {manager: hpa, operation: Update, time: "2026-11-23T12:00:00Z", fieldsType: FieldsV1, fieldsV1: {"f:type": {}}}]},
  type: "changed"}`)
			children := h.c.caches.children[secretsGVR.String()].Whole().GetIndexer()
			var last error
			if tc.changedBy != "" {
				// the child as the policy's previous version left it: replaced first, as a change
				// of the policy or the parent replaces it
				previous := changed.DeepCopy()
				previous.Object["type"] = "previous"
				previous.SetManagedFields(previous.GetManagedFields()[:1])
				if err := children.Add(previous); err != nil {
					t.Fatal(err)
				}
				if err := h.c.syncer.sync(t.Context(), "ns/p"); err != nil {
					t.Fatal(err)
				}
				if err := children.Delete(previous); err != nil {
					t.Fatal(err)
				}
			} else {
				last = h.c.syncer.sync(t.Context(), "ns/p") // no child: created
			}
			for range 2 * (fightLimit + 3) {
				if tc.changedBy == "" {
					last = h.c.syncer.sync(t.Context(), "ns/p") // deleted again: created again
					continue
				}
				// changed again: deleted and created anew in the same sync (a Secret goes at once)
				if err := children.Add(changed); err != nil {
					t.Fatal(err)
				}
				last = h.c.syncer.sync(t.Context(), "ns/p")
				if err := children.Delete(changed); err != nil {
					t.Fatal(err)
				}
			}
			if n := countOf(h.writes(), "delete secrets"); n != tc.wantDeletes {
				t.Errorf("%d deletions to recreate, want %d", n, tc.wantDeletes)
			}
			var se *syncError
			if !errors.As(last, &se) || se.reason != tc.wantReason {
				t.Errorf("last sync: %v, want %s", last, tc.wantReason)
			}
		})
	}
}

// A parent's writes by child are found by identity however many children it has: in the slice
// of the few, and once there are more, in the map.
func TestWritesByIDFindEachChildsWrites(t *testing.T) {
	for _, n := range []int{1, fewWrites, fewWrites + 1, 3 * fewWrites} {
		var b writesByID
		for i := range n {
			b.set(fmt.Sprint("child-", i), &childWrites{written: contentSum{byte(i)}})
		}
		b.set("child-0", &childWrites{written: contentSum{0xff}})
		for i := range n {
			want := contentSum{byte(i)}
			if i == 0 {
				want = contentSum{0xff}
			}
			if got := b.get(fmt.Sprint("child-", i)); got == nil || got.written != want {
				t.Errorf("%d children: child-%d's writes %+v, want %x", n, i, got, want)
			}
		}
		if got := b.get("unknown"); got != nil {
			t.Errorf("%d children: an unknown child's writes %+v", n, got)
		}
	}
}

// A child's content hash is held as its 32 bytes, and tells two contents apart as its hex does,
// a content hash not of ours (not 64 hex digits) included.
func TestAContentSumIsTheContentHashsBytes(t *testing.T) {
	child := func(hash string) *unstructured.Unstructured {
		u := &unstructured.Unstructured{Object: map[string]any{}}
		u.SetAnnotations(map[string]string{contract.AnnotationContentHash: hash})
		return u
	}
	hexHash := strings.Repeat("0123456789abcdef", 4)
	sum := contentSumOf(child(hexHash))
	if got := hex.EncodeToString(sum[:]); got != hexHash {
		t.Errorf("the sum of %q is %q", hexHash, got)
	}
	for _, other := range []string{strings.Repeat("0123456789abcdef", 3) + "0123456789abcdee", "not-a-hash", hexHash + "00"} {
		first, again := contentSumOf(child(other)), contentSumOf(child(other))
		if first == sum {
			t.Errorf("%q has the sum of %q", other, hexHash)
		}
		if first != again {
			t.Errorf("%q has two sums", other)
		}
	}
}

// Every parent has a state, so it holds in 80 bytes what every parent needs, and what few do
// apart (seldomState): it took 128.
func TestAParentsStateTakes80Bytes(t *testing.T) {
	if size := unsafe.Sizeof(parentState{}); size > 80 {
		t.Errorf("a parent's state takes %d bytes", size)
	}
}
