package controller

import (
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	clienttesting "k8s.io/client-go/testing"

	"metacel.dev/metacel/runtime/contract"
	"metacel.dev/metacel/runtime/render"
	"metacel.dev/metacel/test/testpolicies"
)

// reachPolicy writes its child, when the parent's data.ns names a namespace, into that namespace;
// its parents may reach namespace far (and the reserved one, which no confinement opens).
var reachPolicy = testpolicies.YAML("farcopy", testpolicies.Fills{"NAMESPACES": "[far, metacel-system]"})

func TestAnObjectOutOfTheParentsReachOrRecordNeitherPinsItNorIsCleanedUp(t *testing.T) {
	const (
		deleting       = `deletionTimestamp: "2026-11-23T12:00:00Z", finalizers: [metacel.dev/cleanup], `
		recorded       = `annotations: {metacel.dev/children: s-1}, `
		recordsAnother = `annotations: {metacel.dev/children: s-0}, `
	)
	tests := []struct {
		name      string
		parent    string // the parent's extra metadata
		namespace string // of an object applied by metacel that carries the parent's labels
		want      string // the writes of one sync
		reported  string // the reason of the event that says the object is ignored, if any
	}{
		{"an object in a namespace the parent may not reach gives it no finalizer and is not deleted", ``, "attacker", "", contract.ReasonChildOutOfReach},
		{"an object in reach that the parent's record does not name gives it no finalizer and is not deleted", ``, "far", "", contract.ReasonChildNotRecorded},
		{"an object in reach that the parent records is its child: the finalizer, then the object deleted", recorded, "far", "patch configmaps,delete secrets", ""},
		{"an object recorded, but out of reach, is still no child", recorded, "attacker", "patch configmaps", contract.ReasonChildOutOfReach},
		{"a deleted parent is finalized past an object it may not reach", deleting, "attacker", "patch configmaps", contract.ReasonChildOutOfReach},
		{"a deleted parent is finalized past an object in the reserved namespace", deleting, "metacel-system", "patch configmaps", contract.ReasonChildOutOfReach},
		{"a deleted parent is finalized past an object in reach that its record does not name", deleting + recordsAnother, "far", "patch configmaps", contract.ReasonChildNotRecorded},
		{"a deleted parent deletes its recorded child in reach, and waits for it", deleting + recorded, "far", "delete secrets", ""},
		{"a deleted parent with no record (synced before records) deletes its child in reach, and waits for it", deleting, "far", "delete secrets", ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, reachPolicy)
			h.c.deps.ReservedNamespace = "metacel-system"
			parent := objectFrom(t, `{apiVersion: v1, kind: ConfigMap, metadata: {`+tc.parent+`name: p, namespace: ns, uid: p-1}}`)
			h.store(t, configmapsGVR, parent)
			h.cacheParent(t, parent)
			// anyone may set the labels, and use metacel's field manager, and keep the object with
			// a finalizer of their own
			forged := objectFrom(t, `{apiVersion: v1, kind: Secret, metadata: {name: forged, namespace: `+tc.namespace+`, uid: s-1, finalizers: [example.com/keep],
  labels: {app.kubernetes.io/managed-by: metacel, metacel.dev/policy: copy, metacel.dev/parent-uid: p-1, metacel.dev/child-id: copy}, `+appliedByMetacel+`}}`)
			h.store(t, secretsGVR, forged)
			h.cacheChild(t, forged)
			if err := h.c.syncer.sync(t.Context(), "ns/p"); err != nil {
				t.Fatal(err)
			}
			if w := strings.Join(h.writes(), ","); w != tc.want {
				t.Errorf("writes %q, want %q", w, tc.want)
			}
			reported := ""
			for len(h.recorder.Events) > 0 {
				if e := <-h.recorder.Events; strings.Contains(e, " Ignored Secret "+tc.namespace+"/forged") {
					reported = strings.Fields(e)[1]
				}
			}
			if reported != tc.reported {
				t.Errorf("reported %q, want %q", reported, tc.reported)
			}
		})
	}
}

// A child that garbage collection does not remove with its parent (here cross-namespace) is
// recorded on the parent once created: its UID, which a forged object cannot have; a sync that
// finds the record as it is writes nothing more.
func TestAChildWithoutAnOwnerReferenceIsRecordedOnItsParent(t *testing.T) {
	h := newHarness(t, reachPolicy)
	parent := objectFrom(t, `{apiVersion: v1, kind: ConfigMap, metadata: {name: p, namespace: ns, uid: p-1}, data: {ns: far}}`)
	h.store(t, configmapsGVR, parent)
	h.cacheParent(t, parent)
	h.react("create", "secrets", func(a clienttesting.Action) (bool, runtime.Object, error) {
		created := a.(clienttesting.CreateAction).GetObject().(*unstructured.Unstructured).DeepCopy()
		created.SetUID("s-9")
		return true, created, nil
	})
	if err := h.c.syncer.sync(t.Context(), "ns/p"); err != nil {
		t.Fatal(err)
	}
	if w := strings.Join(h.writes(), ","); w != "patch configmaps,create secrets,patch configmaps" {
		t.Errorf("writes %q, want the finalizer, the child, the record", w)
	}
	got, err := h.client.Resource(configmapsGVR).Namespace("ns").Get(t.Context(), "p", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if record := got.GetAnnotations()[contract.AnnotationChildren]; record != "s-9" {
		t.Errorf("record %q, want the child's UID s-9", record)
	}
	if !render.RecordOf(got, true).Records(render.RecordValue(got, []*unstructured.Unstructured{objectFrom(t, `{metadata: {uid: s-9}}`)})) {
		t.Error("a sync that finds the record as it is would write it again")
	}
}
