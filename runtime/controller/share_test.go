package controller

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	clienttesting "k8s.io/client-go/testing"

	"metacel.dev/metacel/runtime/contract"
	"metacel.dev/metacel/runtime/hashslot"
	"metacel.dev/metacel/runtime/render"
)

// syncCreatingSecrets syncs a parent, the API server creating the Secrets asked for, and returns
// the writes made.
func syncCreatingSecrets(t *testing.T, h *harness, key string) string {
	t.Helper()
	h.react("create", "secrets", func(a clienttesting.Action) (bool, runtime.Object, error) {
		return true, a.(clienttesting.CreateAction).GetObject().(*unstructured.Unstructured), nil
	})
	if err := h.c.syncer.sync(t.Context(), key); err != nil {
		t.Fatal(err)
	}
	return strings.Join(h.writes(), ",")
}

// copyToSecret is a policy that copies a ConfigMap's data.a into a Secret's type.
func copyToSecret() string { return secretsPolicy(secretChild(`type: "${parent.data.a}"`)) }

// During a rollout each version's controller syncs its share of the parents only: a parent
// outside it costs no write, and counts neither in Counts nor as synced.
func TestAControllerSyncsOnlyItsShare(t *testing.T) {
	policy := copyToSecret()
	tests := []struct {
		name       string
		holds      func(types.UID) bool
		wantWrites string
		wantCounts Counts
	}{
		{"no share: every parent", nil, "create secrets", Counts{Parents: 1, Ready: 1}},
		{"a share that holds the parent", func(uid types.UID) bool { return uid == "p-1" }, "create secrets", Counts{Parents: 1, Ready: 1}},
		{"a share without the parent", func(uid types.UID) bool { return uid != "p-1" }, "", Counts{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t, policy)
			h.c.SetShare(tt.holds)
			h.cacheParent(t, objectFrom(t, `{apiVersion: v1, kind: ConfigMap, metadata: {name: p, namespace: ns, uid: p-1, resourceVersion: "2"}, data: {a: "new"}}`))
			if got := syncCreatingSecrets(t, h, "ns/p"); got != tt.wantWrites {
				t.Errorf("writes %q, want %q", got, tt.wantWrites)
			}
			if got := h.c.Parents().Count(); got != tt.wantCounts {
				t.Errorf("Counts = %+v, want %+v", got, tt.wantCounts)
			}
			if got, want := h.c.Parents().Synced(objectFrom(t, `{metadata: {name: p, namespace: ns, uid: p-1}}`)), tt.wantWrites != ""; got != want {
				t.Errorf("Parents().Synced = %v, want %v", got, want)
			}
		})
	}
}

// A parent that a share gains is synced anew even though its inputs did not change: the other
// version synced it last.
func TestAShareChangeForgetsUnchangedInputs(t *testing.T) {
	policy := copyToSecret()
	h := newHarness(t, policy)
	h.cacheParent(t, objectFrom(t, `{apiVersion: v1, kind: ConfigMap, metadata: {name: p, namespace: ns, uid: p-1, resourceVersion: "2"}, data: {a: "new"}}`))
	h.react("create", "secrets", func(a clienttesting.Action) (bool, runtime.Object, error) {
		return true, a.(clienttesting.CreateAction).GetObject().(*unstructured.Unstructured), nil
	})
	if err := h.c.syncer.sync(t.Context(), "ns/p"); err != nil {
		t.Fatal(err)
	}
	h.c.SetShare(func(types.UID) bool { return true })
	h.client.ClearActions()
	if err := h.c.syncer.sync(t.Context(), "ns/p"); err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(h.writes(), ","); got != "create secrets" {
		t.Errorf("writes after a share change %q, want the sync done again (the cache holds no secret: create secrets)", got)
	}
	if h.c.Parents().Count().Ready != 1 || h.c.share.whole() {
		t.Errorf("Counts %+v, whole set %v", h.c.Parents().Count(), h.c.share.whole())
	}
}

// With sharding, a replica syncs the parents of the slots it holds only.
func TestAShardedControllerSyncsTheParentsOfItsSlots(t *testing.T) {
	policy := copyToSecret()
	const uid = "9b2d6c1e-4f4a-4c3e-9d59-2f6a5e0c7b11"
	slot := hashslot.Of(uid)
	tests := []struct {
		name       string
		slots      hashslot.Set
		wantWrites string
	}{
		{"the parent's slot held: synced", hashslot.SetOf(hashslot.Range{From: slot, To: slot + 1}), "create secrets"},
		{"every other slot held: not synced", ^hashslot.SetOf(hashslot.Range{From: slot, To: slot + 1}), ""},
		{"no slot held: not synced", 0, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t, policy)
			h.c.sharding = newSharding(false, &h.c.caches, &h.c.share, &h.c.syncing, h.c.deps.Pool, h.c.policy.Parent.GVR, h.c.resyncAll)
			h.c.sharding.narrowSlots(tt.slots)
			h.cacheParent(t, objectFrom(t, `{apiVersion: v1, kind: ConfigMap, metadata: {name: p, namespace: ns, uid: `+uid+`, resourceVersion: "2"}, data: {a: "new"}}`))
			if got := syncCreatingSecrets(t, h, "ns/p"); got != tt.wantWrites {
				t.Errorf("writes %q, want %q", got, tt.wantWrites)
			}
		})
	}
}

// A replica letting go of slots waits for the syncs under way: once narrowSlots returns, no sync
// of a parent of those slots is running.
func TestLettingGoOfSlotsWaitsForTheSyncsUnderWay(t *testing.T) {
	h := newHarness(t, secretsPolicy(secretChild(`type: "x"`)))
	h.c.sharding = newSharding(false, &h.c.caches, &h.c.share, &h.c.syncing, h.c.deps.Pool, h.c.policy.Parent.GVR, h.c.resyncAll)
	h.c.sharding.narrowSlots(^hashslot.Set(0))
	h.c.syncing.RLock() // a sync under way
	done := make(chan struct{})
	go func() {
		h.c.sharding.narrowSlots(0)
		close(done)
	}()
	select {
	case <-done:
		t.Fatal("narrowSlots returned while a sync was under way")
	case <-time.After(50 * time.Millisecond): // not a poll: a window in which it must not return
	}
	h.c.syncing.RUnlock()
	<-done
}

// Counts reads a parent's mark by the UID of the parent the cache holds: a parent deleted and
// created again under its name is not ready until a sync of the new one says so, and a forgotten
// parent takes its mark with it.
func TestCountsReadTheMarksOfTheCachedParents(t *testing.T) {
	ready := []render.Condition{{Type: contract.ConditionReady, Status: "True"}}
	failing := []render.Condition{{Type: contract.ConditionSynced, Status: "False"}}
	parent := func(uid string) *unstructured.Unstructured {
		return objectFrom(t, `{apiVersion: v1, kind: ConfigMap, metadata: {name: p, namespace: ns, uid: `+uid+`}}`)
	}
	tests := []struct {
		name   string
		marks  func(c *Controller)
		cached *unstructured.Unstructured
		want   Counts
	}{
		{"the cached parent's own mark", func(c *Controller) { c.states.markParent("ns/p", "p-1", ready) }, parent("p-1"), Counts{Parents: 1, Ready: 1}},
		{"a failing parent", func(c *Controller) { c.states.markParent("ns/p", "p-1", failing) }, parent("p-1"), Counts{Parents: 1, Failing: 1}},
		{"the mark of an earlier parent of the same name", func(c *Controller) { c.states.markParent("ns/p", "p-1", ready) }, parent("p-2"), Counts{Parents: 1}},
		{"the new parent's mark replaces the old one's", func(c *Controller) {
			c.states.markParent("ns/p", "p-1", ready)
			c.states.markParent("ns/p", "p-2", failing)
		}, parent("p-2"), Counts{Parents: 1, Failing: 1}},
		{"a forgotten parent", func(c *Controller) {
			c.states.markParent("ns/p", "p-1", ready)
			c.states.forget("ns/p")
		}, parent("p-1"), Counts{Parents: 1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t, copyToSecret())
			tt.marks(h.c)
			h.cacheParent(t, tt.cached)
			if got := h.c.Parents().Count(); got != tt.want {
				t.Errorf("Counts = %+v, want %+v", got, tt.want)
			}
		})
	}
	h := newHarness(t, copyToSecret())
	h.c.states.markParent("ns/p", "p-1", ready)
	h.c.states.markParent("ns/p", "p-2", ready)
	h.c.states.forget("ns/p")
	if len(h.c.states.byKey) != 0 || len(h.c.states.byMarkedUID) != 0 {
		t.Errorf("after the parent is forgotten the parent states hold %v and %v, want nothing", h.c.states.byKey, h.c.states.byMarkedUID)
	}
}

// TestCountingParentsBuildsNoSliceOfThem: the policy status counts every second, so a count
// that has to read the parents allocates only client-go's copy of the one informer's list,
// whatever the number of parents (before Cache.All, a slice of their metadata grew beside it: 17
// allocations at 10,000), and a count with nothing changed since the last reads none of them
// and allocates nothing (it read every parent every second before, at rest too).
func TestCountingParentsBuildsNoSliceOfThem(t *testing.T) {
	h := newHarness(t, copyToSecret())
	cacheCountedParents(t, h, 1000, func(int) bool { return true })
	var got Counts
	recount := func() {
		h.c.states.noteParentEvent()
		got = h.c.Parents().Count()
	}
	if allocs := testing.AllocsPerRun(10, recount); allocs != 1 {
		t.Errorf("a count after a parent's event allocated %v times over 1,000 parents, want 1 (client-go's copy of the list)", allocs)
	}
	if got.Parents != 1000 || got.Ready != 1000 {
		t.Fatalf("Counts = %+v, want 1000 parents, 1000 ready", got)
	}
	if allocs := testing.AllocsPerRun(10, func() { got = h.c.Parents().Count() }); allocs != 0 {
		t.Errorf("a count with nothing changed allocated %v times, want 0", allocs)
	}
	if got.Parents != 1000 || got.Ready != 1000 {
		t.Fatalf("Counts = %+v, want 1000 parents, 1000 ready", got)
	}
}

// TestACountFollowsEveryChangeAfterTheLast: Count reads the parents again only after something
// it counts changed; each kind of change, made after a count, shows in the next one.
func TestACountFollowsEveryChangeAfterTheLast(t *testing.T) {
	ready := []render.Condition{{Type: contract.ConditionReady, Status: "True"}}
	failing := []render.Condition{{Type: contract.ConditionSynced, Status: "False"}}
	tests := []struct {
		name   string
		change func(t *testing.T, h *harness)
		want   Counts
	}{
		{"nothing", func(*testing.T, *harness) {}, Counts{Parents: 2, Ready: 1}},
		{"a parent synced ready", func(_ *testing.T, h *harness) {
			h.c.states.markParent("ns/p-00001", "uid-00001", ready)
		}, Counts{Parents: 2, Ready: 2}},
		{"a ready parent now failing", func(_ *testing.T, h *harness) {
			h.c.states.markParent("ns/p-00000", "uid-00000", failing)
		}, Counts{Parents: 2, Failing: 1}},
		{"a parent forgotten", func(_ *testing.T, h *harness) { h.c.states.forget("ns/p-00000") }, Counts{Parents: 2}},
		{"a parent added, its event seen", func(t *testing.T, h *harness) {
			added := objectFrom(t, `{apiVersion: v1, kind: ConfigMap, metadata: {name: p-new, namespace: ns, uid: uid-new}}`)
			if err := h.c.caches.parents.Whole().GetIndexer().Add(cached(t, added)); err != nil {
				t.Fatal(err)
			}
			h.c.parentHandler().OnAdd(added, false)
		}, Counts{Parents: 3, Ready: 1}},
		{"a parent replaced under its name, its update seen", func(t *testing.T, h *harness) {
			old := objectFrom(t, `{apiVersion: v1, kind: ConfigMap, metadata: {name: p-00000, namespace: ns, uid: uid-00000, resourceVersion: "1"}}`)
			replaced := objectFrom(t, `{apiVersion: v1, kind: ConfigMap, metadata: {name: p-00000, namespace: ns, uid: uid-again, resourceVersion: "2"}}`)
			if err := h.c.caches.parents.Whole().GetIndexer().Update(cached(t, replaced)); err != nil {
				t.Fatal(err)
			}
			h.c.parentHandler().OnUpdate(old, replaced)
		}, Counts{Parents: 2}},
		{"a parent deleted, its event seen", func(t *testing.T, h *harness) {
			gone := objectFrom(t, `{apiVersion: v1, kind: ConfigMap, metadata: {name: p-00000, namespace: ns, uid: uid-00000}}`)
			if err := h.c.caches.parents.Whole().GetIndexer().Delete(cached(t, gone)); err != nil {
				t.Fatal(err)
			}
			h.c.parentHandler().OnDelete(gone)
		}, Counts{Parents: 1}},
		{"a share set", func(_ *testing.T, h *harness) {
			h.c.SetShare(func(uid types.UID) bool { return uid == "uid-00001" })
		}, Counts{Parents: 1}},
		{"the slots held changed", func(_ *testing.T, h *harness) {
			h.c.share.sharded.Store(true)
			h.c.share.setSlots(0)
		}, Counts{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t, copyToSecret())
			cacheCountedParents(t, h, 2, func(i int) bool { return i == 0 })
			if got, want := h.c.Parents().Count(), (Counts{Parents: 2, Ready: 1}); got != want {
				t.Fatalf("Counts before = %+v, want %+v", got, want)
			}
			tt.change(t, h)
			if got := h.c.Parents().Count(); got != tt.want {
				t.Errorf("Counts after = %+v, want %+v", got, tt.want)
			}
		})
	}
}

// BenchmarkCounts counts 10,000 cached parents, 9,000 of them synced and ready, as the policy
// status does every second: after a parent's event (the parents are read), and with nothing
// changed since the last count (at rest).
func BenchmarkCounts(b *testing.B) {
	h := newHarness(b, copyToSecret())
	cacheCountedParents(b, h, 10000, func(i int) bool { return i%10 != 0 })
	for _, bb := range []struct {
		name  string
		event bool
	}{{"after a parent's event", true}, {"nothing changed", false}} {
		b.Run(bb.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if bb.event {
					h.c.states.noteParentEvent()
				}
				if got := h.c.Parents().Count(); got.Parents != 10000 || got.Ready != 9000 {
					b.Fatalf("Counts = %+v", got)
				}
			}
		})
	}
}

// cacheCountedParents caches n parents p-00000..., those ready says as synced and ready.
func cacheCountedParents(tb testing.TB, h *harness, n int, ready func(i int) bool) {
	tb.Helper()
	conds := []render.Condition{{Type: contract.ConditionReady, Status: "True"}}
	for i := range n {
		p := &unstructured.Unstructured{}
		p.SetAPIVersion("v1")
		p.SetKind("ConfigMap")
		p.SetNamespace("ns")
		p.SetName(fmt.Sprintf("p-%05d", i))
		p.SetUID(types.UID(fmt.Sprintf("uid-%05d", i)))
		h.cacheParent(tb, p)
		if ready(i) {
			h.c.states.markParent(parentKey(p), p.GetUID(), conds)
		}
	}
}
