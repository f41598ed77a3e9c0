package controller

import (
	"context"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
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

	waitFor(t, "the resync to wait for its timer", clock.HasWaiters)
	if n := h.c.queue.Len(); n != 0 {
		t.Fatalf("queued at the start: %d parents, want none before a period has passed", n)
	}
	clock.Step(period + period/10) // the longest the jitter makes it
	waitFor(t, "the parent to be queued a period after the start", func() bool { return h.c.queue.Len() == 1 })
}

// waitFor polls cond until it holds, failing the test after 10 seconds.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	if err := wait.PollUntilContextTimeout(t.Context(), time.Millisecond, 10*time.Second, true,
		func(context.Context) (bool, error) { return cond(), nil }); err != nil {
		t.Fatalf("waiting for %s: %v", what, err)
	}
}
