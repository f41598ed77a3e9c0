package controller

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	testingclock "k8s.io/utils/clock/testing"
)

// The informers' lists queue every parent when a controller starts; its periodic resync comes a
// period later, not at the start too: one at the start, while the workers drain the lists' keys,
// would sync again each parent already done (up to 1.7 syncs per parent in a restart over
// 10,000 converged parents).
func TestTheFirstResyncComesAPeriodAfterTheStart(t *testing.T) {
	const period = 30 * time.Second
	h := newHarness(t, typedPolicy)
	h.cacheParent(t, objectFrom(t, `{apiVersion: v1, kind: ConfigMap, metadata: {name: p, namespace: ns, uid: p-1, resourceVersion: "1"}}`))
	clock := testingclock.NewFakeClock(time.Now())
	h.c.deps.Clock = clock
	go h.c.resyncEvery(t.Context(), period)

	eventually(t, "the resync to wait for its timer", func() error {
		if !clock.HasWaiters() {
			return errors.New("nothing waits on the clock")
		}
		return nil
	})
	if n := h.c.queue.Len(); n != 0 {
		t.Fatalf("queued at the start: %d parents, want none before a period has passed", n)
	}
	clock.Step(period + period/10) // the longest the jitter makes it
	eventually(t, "the parent to be queued a period after the start", func() error {
		if n := h.c.queue.Len(); n != 1 {
			return fmt.Errorf("%d parents queued, want 1", n)
		}
		return nil
	})
}

// A resync, a relist's unchanged objects and a re-sync of every parent (a share or slot moved)
// queue every parent, only to look at it again; an edit, a child's event or a retry asks for a sync because something changed. The
// queue hands out the second first: at 100,000 parents an edit made during a resync waited behind
// every parent queued before it (p99 1.3 s, first in first out).
func TestAnEditIsSyncedBeforeTheParentsALookAgainQueued(t *testing.T) {
	tests := []struct {
		name      string
		lookAgain func(t *testing.T, h *harness, parents []*unstructured.Unstructured)
	}{{
		name:      "a resync",
		lookAgain: func(_ *testing.T, h *harness, _ []*unstructured.Unstructured) { h.c.enqueueAll() },
	}, {
		name:      "a share, a slot or a namespace's consent moved",
		lookAgain: func(_ *testing.T, h *harness, _ []*unstructured.Unstructured) { h.c.resyncAll() },
	}, {
		name: "a relist, the parents unchanged",
		lookAgain: func(t *testing.T, h *harness, parents []*unstructured.Unstructured) {
			for _, p := range parents {
				h.c.parentHandler().OnUpdate(cached(t, p), cached(t, p))
			}
		},
	}, {
		name: "a relist of the children, unchanged",
		lookAgain: func(t *testing.T, h *harness, parents []*unstructured.Unstructured) {
			for _, p := range parents {
				child := objectFrom(t, fmt.Sprintf(`{apiVersion: v1, kind: Secret, metadata: {name: %s-copy, namespace: ns, resourceVersion: "7", labels: {metacel.dev/policy: copy, metacel.dev/parent-uid: %s}}}`, p.GetName(), p.GetUID()))
				h.c.childHandler().OnUpdate(cached(t, child), cached(t, child))
			}
		},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t, typedPolicy)
			var parents []*unstructured.Unstructured
			for i := range 20 {
				p := objectFrom(t, fmt.Sprintf(`{apiVersion: v1, kind: ConfigMap, metadata: {name: p%d, namespace: ns, uid: p-%d, resourceVersion: "1"}}`, i, i))
				h.cacheParent(t, p)
				parents = append(parents, p)
			}
			tt.lookAgain(t, h, parents)
			// an edit of a parent the look again did not queue: first in, first out, it is synced
			// last (the raise of a key queued already is priorityqueue's test)
			edited := objectFrom(t, `{apiVersion: v1, kind: ConfigMap, metadata: {name: edited, namespace: ns, uid: edited, resourceVersion: "2"}}`)
			h.cacheParent(t, edited)
			h.c.parentHandler().OnUpdate(nil, cached(t, edited))

			if n := h.c.queue.Len(); n != len(parents)+1 {
				t.Fatalf("%d parents queued, want %d: each once", n, len(parents)+1)
			}
			if key, _ := h.c.queue.Get(); key != "ns/edited" {
				t.Errorf("a worker took %q first, want the edited parent", key)
			}
		})
	}
}
