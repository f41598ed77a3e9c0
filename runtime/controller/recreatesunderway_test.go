package controller

import (
	"errors"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	clienttesting "k8s.io/client-go/testing"
)

// A controller whose policy was removed finishes the Recreates under way and does nothing else:
// a parent whose Recreate waits gets its new child once the old one is gone; a parent with no
// Recreate under way, a new one say, gets nothing; and no new Recreate starts.
func TestARemovedPolicyOnlyFinishesItsRecreates(t *testing.T) {
	h := newHarness(t, recreatePolicy)
	h.react("create", "secrets", func(a clienttesting.Action) (bool, runtime.Object, error) {
		return true, a.(clienttesting.CreateAction).GetObject().(*unstructured.Unstructured).DeepCopy(), nil
	})
	h.react("delete", "secrets", func(clienttesting.Action) (bool, runtime.Object, error) { return true, nil, nil })
	for _, p := range []string{"waiting", "changed", "new"} {
		h.cacheParent(t, objectFrom(t, `{apiVersion: v1, kind: ConfigMap, metadata: {name: `+p+`, namespace: ns, uid: `+p+`-1}, data: {a: "x"}}`))
	}
	// a finalizer holds the old Secrets: a Recreate waits for them to go
	old := func(p string) *unstructured.Unstructured {
		return objectFrom(t, `{apiVersion: v1, kind: Secret, metadata: {name: `+p+`-copy, namespace: ns, uid: `+p+`-s, finalizers: [example.com/hold],
  ownerReferences: [{apiVersion: v1, kind: ConfigMap, name: `+p+`, uid: `+p+`-1, controller: true}],
  labels: {app.kubernetes.io/managed-by: metacel, metacel.dev/policy: copy, metacel.dev/parent-uid: `+p+`-1, metacel.dev/child-id: copy},
  `+appliedByMetacel+`}, type: "old"}`)
	}
	children := h.c.caches.children[secretsGVR.String()].Whole().GetIndexer()
	waiting := old("waiting")
	if err := children.Add(waiting); err != nil {
		t.Fatal(err)
	}
	if err := children.Add(old("changed")); err != nil {
		t.Fatal(err)
	}
	if err := h.c.syncer.sync(t.Context(), "ns/waiting"); err != nil { // deletes the old Secret: a Recreate under way
		t.Fatal(err)
	}
	h.client.ClearActions()

	done := make(chan struct{})
	go func() { h.c.FinishRecreates(t.Context(), 10*time.Second); close(done) }()
	eventually(t, "FinishRecreates to mark the controller removed", draining(h))
	// a sync before the cache shows the old Secret going sends its deletion again, and keeps
	// waiting; one once it is gone creates the new Secret
	for _, key := range []string{"ns/new", "ns/changed", "ns/waiting"} {
		if err := h.c.syncer.sync(t.Context(), key); err != nil {
			t.Fatal(err)
		}
	}
	if err := children.Delete(waiting); err != nil {
		t.Fatal(err)
	}
	if err := h.c.syncer.sync(t.Context(), "ns/waiting"); err != nil {
		t.Fatal(err)
	}
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("FinishRecreates did not return once the Recreate completed")
	}
	if got := strings.Join(h.writes(), ","); got != "delete secrets,create secrets" {
		t.Errorf("writes %q, want only the Recreate under way: its deletion again, then the create", got)
	}
}

// finishing runs FinishRecreates in the background, once it has marked the controller removed;
// the channel closes when it returns.
func finishing(t *testing.T, h *harness) <-chan struct{} {
	t.Helper()
	done := make(chan struct{})
	go func() { h.c.FinishRecreates(t.Context(), 10*time.Second); close(done) }()
	eventually(t, "FinishRecreates to mark the controller removed", draining(h))
	return done
}

// draining returns an error unless the controller is marked removed.
func draining(h *harness) func() error {
	return func() error {
		if !h.c.drain.draining.Load() {
			return errors.New("not marked removed")
		}
		return nil
	}
}

func waitDone(t *testing.T, done <-chan struct{}) {
	t.Helper()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("FinishRecreates did not return once the Recreates under way completed")
	}
}

// The Recreates a removed policy finishes are not only those its own syncs started: a child the
// cache shows going when the removal comes (a predecessor's deletion, one no sync has seen yet)
// is created anew once gone; and a create that fails is retried, not forgotten.
func TestARemovedPolicyFinishesTheRecreatesTheCacheShowsAndRetriesAFailedCreate(t *testing.T) {
	h := newHarness(t, recreatePolicy)
	h.cacheParent(t, objectFrom(t, `{apiVersion: v1, kind: ConfigMap, metadata: {name: p, namespace: ns, uid: p-1}, data: {a: "x"}}`))
	going := objectFrom(t, `{apiVersion: v1, kind: Secret, metadata: {name: p-copy, namespace: ns, uid: p-s, finalizers: [example.com/hold],
  deletionTimestamp: "2026-11-26T00:00:00Z",
  ownerReferences: [{apiVersion: v1, kind: ConfigMap, name: p, uid: p-1, controller: true}],
  labels: {app.kubernetes.io/managed-by: metacel, metacel.dev/policy: copy, metacel.dev/parent-uid: p-1, metacel.dev/child-id: copy},
  `+appliedByMetacel+`}, type: "old"}`)
	children := h.c.caches.children[secretsGVR.String()].Whole().GetIndexer()
	if err := children.Add(going); err != nil {
		t.Fatal(err)
	}
	creates := 0
	h.react("create", "secrets", func(a clienttesting.Action) (bool, runtime.Object, error) {
		if creates++; creates == 1 {
			return true, nil, apierrors.NewServiceUnavailable("try again")
		}
		return true, a.(clienttesting.CreateAction).GetObject().(*unstructured.Unstructured).DeepCopy(), nil
	})
	done := finishing(t, h)
	// FinishRecreates marks it once draining is set
	eventually(t, "the Recreate the cache shows to be marked under way", func() error {
		if !h.c.states.recreatingAny("ns/p") {
			return errors.New("no Recreate of ns/p under way")
		}
		return nil
	})
	if err := children.Delete(going); err != nil { // gone
		t.Fatal(err)
	}
	if err := h.c.syncer.sync(t.Context(), "ns/p"); err == nil {
		t.Fatal("the first create fails: want the sync failed")
	}
	if err := h.c.syncer.sync(t.Context(), "ns/p"); err != nil { // its retry
		t.Fatal(err)
	}
	waitDone(t, done)
	if got := strings.Join(h.writes(), ","); got != "create secrets,create secrets" {
		t.Errorf("writes %q, want the create that failed, then its retry", got)
	}
}
