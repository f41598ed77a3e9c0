package controller

import (
	"errors"
	"fmt"
	"testing"
	"time"

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
