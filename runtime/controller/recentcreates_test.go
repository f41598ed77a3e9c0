package controller

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/cache"
	testingclock "k8s.io/utils/clock/testing"

	"metacel.dev/metacel/runtime/apply"
	"metacel.dev/metacel/runtime/compact"
	"metacel.dev/metacel/runtime/informers"
)

// A parent synced again from a child cache that does not show yet the child its last sync
// created (the parent's own status write brings such a sync) takes that child as the create
// returned it: no second create, which the API server would answer 409 AlreadyExists. That holds
// for a while after the cache delivered the child (the sync may have read it just before), and
// ends when the cache delivers its deletion, or after undeliveredFor without any event of it.
func TestAChildCreatedLatelyIsNotCreatedAgain(t *testing.T) {
	tests := []struct {
		name string
		// between the two syncs: the events the cache delivers of the child created, and how
		// long passes
		events func(h cache.ResourceEventHandler, child *unstructured.Unstructured)
		wait   time.Duration
		want   int // creates in all
	}{
		{"not delivered", nil, 0, 1},
		{"not delivered, just before undeliveredFor", nil, undeliveredFor, 1},
		{"not delivered after undeliveredFor", nil, undeliveredFor + time.Second, 2},
		{"delivered as the second sync began", func(h cache.ResourceEventHandler, child *unstructured.Unstructured) {
			h.OnAdd(child, false)
		}, 0, 1},
		{"delivered, deliveredFor before", func(h cache.ResourceEventHandler, child *unstructured.Unstructured) {
			h.OnAdd(child, false)
		}, deliveredFor + time.Second, 2},
		{"delivered, then deleted", func(h cache.ResourceEventHandler, child *unstructured.Unstructured) {
			h.OnAdd(child, false)
			h.OnDelete(child)
		}, 0, 2},
		{"another object of its name deleted", func(h cache.ResourceEventHandler, child *unstructured.Unstructured) {
			other := child.DeepCopy()
			other.SetUID("s-old")
			h.OnDelete(other)
		}, 0, 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, copyToSecret())
			clock := testingclock.NewFakeClock(time.Now())
			h.c.deps.Clock = clock
			var created []*unstructured.Unstructured
			h.react("create", "secrets", func(a clienttesting.Action) (bool, runtime.Object, error) {
				obj := a.(clienttesting.CreateAction).GetObject().(*unstructured.Unstructured).DeepCopy()
				obj.SetUID("s-1")
				obj.SetManagedFields([]metav1.ManagedFieldsEntry{{Manager: apply.FieldManager, Operation: metav1.ManagedFieldsOperationUpdate,
					FieldsType: "FieldsV1", FieldsV1: metav1.NewFieldsV1(`{"f:type":{}}`)}})
				created = append(created, obj)
				return true, obj, nil
			})
			h.cacheParent(t, objectFrom(t, `{apiVersion: v1, kind: ConfigMap, metadata: {name: p, namespace: ns, uid: p-1}, data: {a: "x"}}`))
			if err := h.c.syncer.sync(t.Context(), "ns/p"); err != nil {
				t.Fatal(err)
			}
			if tc.events != nil {
				rc := h.c.caches.children[secretsGVR.String()]
				tc.events(noticing{ResourceEventHandler: cache.ResourceEventHandlerFuncs{}, creates: &rc.creates, clock: clock}, created[0])
			}
			clock.Step(tc.wait)
			before := len(h.writes())
			if err := h.c.syncer.sync(t.Context(), "ns/p"); err != nil {
				t.Fatal(err)
			}
			if len(created) != tc.want {
				t.Errorf("%d creates, want %d; the second sync wrote %v", len(created), tc.want, h.writes()[before:])
			}
			if tc.want == 1 && len(h.writes()) > before {
				t.Errorf("the second sync wrote %v, want nothing", h.writes()[before:])
			}
		})
	}
}

// The children created lately are remembered for a parent, undeliveredFor after their create
// until the cache delivers them, then deliveredFor; a deletion of the same object forgets them at
// once, and an add sweepEvery later forgets those expired.
func TestRecentCreatesRememberAChildForItsParentForAWhile(t *testing.T) {
	t0 := time.Now()
	child := objectFrom(t, `{apiVersion: v1, kind: Secret, metadata: {name: c, namespace: ns, uid: s-1, labels: {metacel.dev/parent-uid: p-1}}}`)
	other := child.DeepCopy()
	other.SetUID("s-old")
	tests := []struct {
		name string
		// then is what happens after the create at t0; the lookup is at t0+at
		then   func(rc *recentCreates)
		at     time.Duration
		parent string
		want   bool
	}{
		{"just created", nil, 0, "p-1", true},
		{"just created, for another parent of its name", nil, 0, "p-2", false},
		{"undelivered, undeliveredFor after", nil, undeliveredFor, "p-1", true},
		{"undelivered, after undeliveredFor", nil, undeliveredFor + time.Millisecond, "p-1", false},
		{"delivered late, deliveredFor after", func(rc *recentCreates) { rc.delivered(child, t0.Add(9*time.Second)) }, 9*time.Second + deliveredFor, "p-1", true},
		{"delivered, after deliveredFor", func(rc *recentCreates) { rc.delivered(child, t0) }, deliveredFor + time.Millisecond, "p-1", false},
		{"delivered twice: from the first", func(rc *recentCreates) {
			rc.delivered(child, t0)
			rc.delivered(child, t0.Add(time.Second))
		}, deliveredFor + time.Millisecond, "p-1", false},
		{"deleted", func(rc *recentCreates) { rc.deleted(child) }, 0, "p-1", false},
		{"deleted as a tombstone", func(rc *recentCreates) { rc.deleted(cache.DeletedFinalStateUnknown{Key: "ns/c", Obj: child}) }, 0, "p-1", false},
		{"another object of its name deleted", func(rc *recentCreates) { rc.deleted(other) }, 0, "p-1", true},
		{"another object of its name delivered", func(rc *recentCreates) { rc.delivered(other, t0) }, deliveredFor + time.Millisecond, "p-1", true},
		{"all forgotten", func(rc *recentCreates) { rc.forgetAll() }, 0, "p-1", false},
		{"expired, then another child created: forgotten by the sweep", func(rc *recentCreates) {
			later := child.DeepCopy()
			later.SetName("later")
			rc.add(heldAsItsCacheHoldsIt(t, later), t0.Add(undeliveredFor+sweepEvery))
			if _, ok := rc.byName["ns/c"]; ok {
				t.Error("the sweep of an add sweepEvery later kept the expired child")
			}
		}, 0, "p-1", false},
		{"expired, and no child created since: forgotten by the periodic sweep", func(rc *recentCreates) {
			rc.sweep(t0.Add(undeliveredFor + time.Millisecond))
			if len(rc.byName) != 0 {
				t.Errorf("the periodic sweep kept %d expired children", len(rc.byName))
			}
		}, 0, "p-1", false},
		{"not expired: kept by the periodic sweep", func(rc *recentCreates) { rc.sweep(t0.Add(time.Second)) }, 0, "p-1", true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			rc := &recentCreates{}
			rc.add(heldAsItsCacheHoldsIt(t, child), t0)
			if tc.then != nil {
				tc.then(rc)
			}
			if got := rc.lookup("ns", "c", tc.parent, t0.Add(tc.at)) != nil; got != tc.want {
				t.Errorf("found %v, want %v", got, tc.want)
			}
		})
	}
}

// Slots let go of forget the children created lately: their deletions no longer reach the
// cache.
func TestDroppedSlotsForgetTheChildrenCreatedLately(t *testing.T) {
	rc := &childCache{Cache: informers.NewCache(nil, secretsGVR, "", "", nil, cache.ResourceEventHandlerFuncs{}, true)}
	rc.AddSlots([]int{3}, func(int) (cache.SharedIndexInformer, func()) {
		return cache.NewSharedIndexInformer(&cache.ListWatch{}, &unstructured.Unstructured{}, 0, nil), func() {}
	})
	child := objectFrom(t, `{apiVersion: v1, kind: Secret, metadata: {name: c, namespace: ns, uid: s-1, labels: {metacel.dev/parent-uid: p-1}}}`)
	now := time.Now()
	rc.creates.add(heldAsItsCacheHoldsIt(t, child), now)
	if rc.creates.lookup("ns", "c", "p-1", now) == nil {
		t.Fatal("a child just created is not remembered")
	}
	if rc.creates.lookup("ns", "c", "p-2", now) != nil {
		t.Error("a child created for another parent of its name is taken")
	}
	rc.dropSlots([]int{3})
	if rc.creates.lookup("ns", "c", "p-1", now) != nil {
		t.Error("a child created lately is remembered after its slot was let go of")
	}
}

// A child created lately that the cache holds, edited so that it no longer reads as the parent's
// (its parent-uid label removed), is not taken as its create returned it: the cache knows better,
// and the sync writes it back (e2e TestEditsThatRemoveAnObjectFromView: taken as remembered, the
// child looked up to date, and kept no label).
func TestAChildCreatedLatelyThatTheCacheHoldsEditedIsWrittenBack(t *testing.T) {
	h := newHarness(t, copyToSecret())
	var created []*unstructured.Unstructured
	h.react("create", "secrets", func(a clienttesting.Action) (bool, runtime.Object, error) {
		obj := a.(clienttesting.CreateAction).GetObject().(*unstructured.Unstructured)
		obj.SetUID("s-1") // and stored as the API server would
		obj.SetManagedFields([]metav1.ManagedFieldsEntry{{Manager: apply.FieldManager, Operation: metav1.ManagedFieldsOperationUpdate,
			FieldsType: "FieldsV1", FieldsV1: metav1.NewFieldsV1(`{"f:type":{}}`)}})
		created = append(created, obj.DeepCopy())
		return false, nil, nil
	})
	h.cacheParent(t, objectFrom(t, `{apiVersion: v1, kind: ConfigMap, metadata: {name: p, namespace: ns, uid: p-1}, data: {a: "x"}}`))
	if err := h.c.syncer.sync(t.Context(), "ns/p"); err != nil {
		t.Fatal(err)
	}
	edited := created[0].DeepCopy()
	labels := edited.GetLabels()
	delete(labels, "metacel.dev/parent-uid")
	edited.SetLabels(labels)
	rc := h.c.caches.children[secretsGVR.String()]
	if err := rc.Whole().GetIndexer().Add(edited); err != nil {
		t.Fatal(err)
	}
	noticing{ResourceEventHandler: cache.ResourceEventHandlerFuncs{}, creates: &rc.creates}.OnUpdate(created[0], edited)
	h.react("patch", "secrets", func(clienttesting.Action) (bool, runtime.Object, error) {
		return true, created[0].DeepCopy(), nil // the labels back
	})
	before := len(h.writes())
	if err := h.c.syncer.sync(t.Context(), "ns/p"); err != nil {
		t.Fatal(err)
	}
	if len(h.writes()) == before {
		t.Error("the second sync wrote nothing: the child edited in the cache was taken as its create returned it")
	}
}

// A child created is remembered as its cache would hold it (compact.AsCached), not as the create
// returned it: without what the cache drops (other managers' fields, kubectl's last-applied
// annotation; the fields no expression reads, here none), so that a burst of creates holds no more per
// child than the cache. A converge of 1,000 MyApps held about 8 KB a Pod this way, a third of
// its live heap at the peak.
func TestAChildCreatedIsRememberedAsItsCacheHoldsIt(t *testing.T) {
	h := newHarness(t, copyToSecret())
	h.react("create", "secrets", func(a clienttesting.Action) (bool, runtime.Object, error) {
		obj := a.(clienttesting.CreateAction).GetObject().(*unstructured.Unstructured).DeepCopy()
		obj.SetUID("s-1")
		obj.SetAnnotations(map[string]string{compact.LastApplied: `{"a":"whole copy"}`})
		obj.SetManagedFields([]metav1.ManagedFieldsEntry{
			{Manager: apply.FieldManager, Operation: metav1.ManagedFieldsOperationUpdate, FieldsType: "FieldsV1", FieldsV1: metav1.NewFieldsV1(`{"f:type":{}}`)},
			{Manager: "kubectl", Operation: metav1.ManagedFieldsOperationUpdate, FieldsType: "FieldsV1", FieldsV1: metav1.NewFieldsV1(`{"f:data":{}}`)},
		})
		return true, obj, nil
	})
	h.cacheParent(t, objectFrom(t, `{apiVersion: v1, kind: ConfigMap, metadata: {name: p, namespace: ns, uid: p-1}, data: {a: "x"}}`))
	if err := h.c.syncer.sync(t.Context(), "ns/p"); err != nil {
		t.Fatal(err)
	}
	rc := h.c.caches.children[secretsGVR.String()]
	if rc.creates.remembered("ns", "p-copy", "p-1", h.c.deps.Clock.Now()) == nil {
		t.Fatal("the child created is not remembered")
	}
	got := rc.creates.lookup("ns", "p-copy", "p-1", h.c.deps.Clock.Now())
	if got == nil {
		t.Fatal("the child created is not found")
	}
	if _, ok := got.GetAnnotations()[compact.LastApplied]; ok {
		t.Error("the child remembered holds kubectl's last-applied annotation")
	}
	entries := got.GetManagedFields()
	if len(entries) != 2 {
		t.Fatalf("the child remembered has %d managed-fields entries, want the create's 2: %v", len(entries), entries)
	}
	for _, e := range entries {
		if hasFields := e.FieldsV1 != nil; hasFields != (e.Manager == apply.FieldManager) {
			t.Errorf("manager %q: holds its fields %v, want only metacel's", e.Manager, hasFields)
		}
	}
	if got.Object["type"] != "x" {
		t.Errorf("the child remembered has type %v, want the create's x", got.Object["type"])
	}
}

// heldAsItsCacheHoldsIt is a child as the controller remembers it once created.
func heldAsItsCacheHoldsIt(tb testing.TB, u *unstructured.Unstructured) *compact.Object {
	tb.Helper()
	o, err := compact.AsCached(u, nil)
	if err != nil {
		tb.Fatal(err)
	}
	return o
}
