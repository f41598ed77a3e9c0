package controller

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	clienttesting "k8s.io/client-go/testing"

	"metacel.dev/metacel/runtime/compact"
)

// A resync costs what a hand-written controller's costs: a sync whose inputs (parent, children,
// related objects) have the resourceVersions of the last successful sync renders nothing and
// writes nothing; one whose inputs have a new resourceVersion is reconciled afresh.
func TestASyncOfTheInputsOfTheLastOneIsSkipped(t *testing.T) {
	h := newHarness(t, typedPolicy)
	parent := objectFrom(t, `{apiVersion: v1, kind: ConfigMap, metadata: {name: p, namespace: ns, uid: p-1, resourceVersion: "1"}, data: {a: "x"}}`)
	h.cacheParent(t, parent)
	var created *unstructured.Unstructured
	h.react("create", "secrets", func(a clienttesting.Action) (bool, runtime.Object, error) {
		created = a.(clienttesting.CreateAction).GetObject().(*unstructured.Unstructured).DeepCopy()
		return true, created, nil
	})
	if err := h.c.syncer.sync(t.Context(), "ns/p"); err != nil || created == nil {
		t.Fatalf("first sync: %v, created %v", err, created)
	}
	// the cache sees the child metacel created, applied
	created.SetUID("s-1")
	created.SetResourceVersion("2")
	created.SetManagedFields([]metav1.ManagedFieldsEntry{{Manager: "metacel", Operation: metav1.ManagedFieldsOperationApply,
		FieldsType: "FieldsV1", FieldsV1: metav1.NewFieldsV1(`{"f:type": {}}`)}})
	h.cacheChild(t, created)
	h.react("patch", "secrets", func(clienttesting.Action) (bool, runtime.Object, error) { return true, created, nil })

	drifted := func(rv string) { // another writer's change: the field is that writer's now
		t.Helper()
		child := created.DeepCopy()
		child.Object["type"] = "drifted"
		child.SetResourceVersion(rv)
		child.SetManagedFields([]metav1.ManagedFieldsEntry{{Manager: "metacel", Operation: metav1.ManagedFieldsOperationApply,
			FieldsType: "FieldsV1", FieldsV1: metav1.NewFieldsV1(`{"f:metadata": {}}`)}, {Manager: "kubectl-edit", Operation: metav1.ManagedFieldsOperationUpdate,
			FieldsType: "FieldsV1", FieldsV1: metav1.NewFieldsV1(`{"f:type": {}}`)}})
		h.cacheChild(t, child)
	}
	steps := []struct {
		name   string
		change func()
		writes int
	}{
		{"a sync of the converged parent writes nothing", func() {}, 0},
		// a cache holding different content under the same resourceVersion cannot happen: it
		// shows that the sync did not even look
		{"the same inputs again: skipped", func() { drifted("2") }, 0},
		{"the child at a new resourceVersion: reconciled (drift reverted)", func() { drifted("3") }, 1},
	}
	for _, s := range steps {
		s.change()
		before := len(h.writes())
		if err := h.c.syncer.sync(t.Context(), "ns/p"); err != nil {
			t.Fatalf("%s: %v", s.name, err)
		}
		if got := len(h.writes()) - before; got != s.writes {
			t.Errorf("%s: %d writes %v, want %d", s.name, got, h.writes()[before:], s.writes)
		}
	}
}

func TestAnInputWithoutResourceVersionIsNeverSkipped(t *testing.T) {
	withRV := objectFrom(t, `{apiVersion: v1, kind: ConfigMap, metadata: {name: p, uid: u, resourceVersion: "1"}}`)
	other := objectFrom(t, `{apiVersion: v1, kind: Secret, metadata: {name: s, uid: s, resourceVersion: "2"}}`)
	without := objectFrom(t, `{apiVersion: v1, kind: Secret, metadata: {name: s, uid: s}}`)
	if _, ok := fingerprint(withRV, []metav1.Object{without}, nil); ok {
		t.Error("a child without a resourceVersion gave a fingerprint")
	}
	a, _ := fingerprint(withRV, []metav1.Object{other}, nil)
	b, _ := fingerprint(withRV, nil, map[string][]*unstructured.Unstructured{"s": {other}})
	if a == b {
		t.Error("the same object as a child and as a related object gave one fingerprint")
	}
	c, _ := fingerprint(withRV, []metav1.Object{other, withRV}, nil)
	d, _ := fingerprint(withRV, []metav1.Object{withRV, other}, nil)
	if c != d {
		t.Error("the order the index yields children in changed the fingerprint")
	}
}

// A skipped sync reads only the caches' metadata: an object it would have to decode is not.
func TestASkippedSyncDecodesNothing(t *testing.T) {
	h := newHarness(t, secretsPolicy(""))
	parent := objectFrom(t, `{apiVersion: v1, kind: ConfigMap, metadata: {name: p, namespace: ns, uid: p-1, resourceVersion: "1"}}`)
	h.cacheParent(t, parent)
	if err := h.c.syncer.sync(t.Context(), "ns/p"); err != nil {
		t.Fatal(err)
	}
	// the same parent, at the same resourceVersion, as a compact cache holds it, but undecodable
	undecodable := compact.NewObject(metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"}, metav1.ObjectMeta{Name: "p", Namespace: "ns", UID: "p-1", ResourceVersion: "1"}, []byte("not JSON"))
	if err := h.c.caches.parents.Whole().GetIndexer().Update(undecodable); err != nil {
		t.Fatal(err)
	}
	if err := h.c.syncer.sync(t.Context(), "ns/p"); err != nil {
		t.Errorf("a sync of unchanged inputs decoded the parent: %v", err)
	}
	undecodable.SetResourceVersion("2")
	if err := h.c.syncer.sync(t.Context(), "ns/p"); err == nil {
		t.Error("a sync of a changed parent did not read it")
	}
}

// The events of a sync's own writes (its status write, the child it created) bring the caches the
// objects as the writes returned them: the next sync of those very inputs renders nothing and
// decodes nothing, unless the policy reads the parent's status, which its own write changed.
func TestTheEventsOfASyncsOwnWritesAreSkipped(t *testing.T) {
	readsStatus := strings.Replace(widgetChildPolicy, `color: "${parent.spec.color}"`, `color: "${parent.?status.?color.orValue(parent.spec.color)}"`, 1)
	for _, tc := range []struct {
		name, policy string
		skipped      bool
	}{
		{"a policy that does not read the parent's status", widgetChildPolicy, true},
		{"a policy that reads the parent's status", readsStatus, false},
		// its status was rendered before the child existed: the child's event must bring a sync
		{"a render that spent over half the sync's budget, leaving none for the status after the writes", costlyChildPolicy(), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, tc.policy, widgetCRD)
			var child *unstructured.Unstructured
			created := func(a clienttesting.Action) (bool, runtime.Object, error) {
				if c, ok := a.(clienttesting.CreateAction); ok {
					child = c.GetObject().(*unstructured.Unstructured).DeepCopy()
				} else {
					child = &unstructured.Unstructured{}
					_ = json.Unmarshal(a.(clienttesting.PatchAction).GetPatch(), &child.Object)
				}
				child.SetUID("c-1")
				child.SetResourceVersion("4")
				return true, child, nil
			}
			h.react("create", "configmaps", created)
			h.react("patch", "configmaps", created)
			h.react("patch", "widgets", func(a clienttesting.Action) (bool, runtime.Object, error) {
				obj := map[string]any{}
				_ = json.Unmarshal(a.(clienttesting.PatchAction).GetPatch(), &obj)
				w := &unstructured.Unstructured{Object: obj}
				w.SetUID("w-1")
				w.SetResourceVersion("5")
				w.SetGeneration(1) // the API server returns the whole object
				return true, w, nil
			})
			parent := widgetWithStatus(t, "red", nil)
			parent.SetResourceVersion("3")
			h.cacheParent(t, parent)
			if err := h.c.syncer.sync(t.Context(), "ns/w"); err != nil || child == nil {
				t.Fatalf("first sync: %v, child %v", err, child)
			}
			// the caches get the parent and the child at the resourceVersions the writes returned,
			// as objects that cannot be decoded: a sync that reads them fails
			undecodable := func(kind string, m metav1.Object) *compact.Object {
				return compact.NewObject(metav1.TypeMeta{APIVersion: "v1", Kind: kind}, metav1.ObjectMeta{
					Name: m.GetName(), Namespace: m.GetNamespace(), UID: m.GetUID(), ResourceVersion: m.GetResourceVersion(),
					Labels: m.GetLabels(), Generation: m.GetGeneration()}, []byte("not JSON"))
			}
			res, _ := h.c.syncer.writer.resourceOf(child)
			if err := h.c.caches.children[res.GVR.String()].Whole().GetIndexer().Add(undecodable("ConfigMap", child)); err != nil {
				t.Fatal(err)
			}
			parent.SetResourceVersion("5")
			if err := h.c.caches.parents.Whole().GetIndexer().Update(undecodable("Widget", parent)); err != nil {
				t.Fatal(err)
			}
			err := h.c.syncer.sync(t.Context(), "ns/w")
			if skipped := err == nil; skipped != tc.skipped {
				t.Errorf("the sync of the writes' own events: skipped %v (err %v), want %v", skipped, err, tc.skipped)
			}
		})
	}
}

// costlyChildPolicy is widgetChildPolicy with a child whose render spends more than half of a
// sync's cost budget (5.6 of 10 million): seven values, each under the limit of one expression.
func costlyChildPolicy() string {
	items := make([]string, 400)
	for i := range items {
		items[i] = strconv.Itoa(i)
	}
	list := "[" + strings.Join(items, ",") + "]"
	data := make([]string, 7)
	for i := range data {
		data[i] = fmt.Sprintf(`k%d: "${%s.all(i, %s.all(j, j >= 0)) ? 'x' : 'y'}"`, i, list, list)
	}
	return strings.Replace(widgetChildPolicy, `metadata: {name: "${parent.metadata.name}-cm"}}`,
		`metadata: {name: "${parent.metadata.name}-cm"}, data: {`+strings.Join(data, ", ")+`}}`, 1)
}
