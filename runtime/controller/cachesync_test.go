package controller

import (
	"sync/atomic"
	"testing"
	"time"

	"k8s.io/client-go/tools/cache"
)

// doneChecker is a cache.DoneChecker whose Done channel is closed when made done.
type doneChecker struct{ ch chan struct{} }

func (d doneChecker) Name() string          { return "test" }
func (d doneChecker) Done() <-chan struct{} { return d.ch }

// The checks of the wait for the caches are read again after each report: with sharding, the
// informer of a slot given up while the controller waited is released and never syncs, and the
// wait must not hang on it (a replica then synced none of its parents).
func TestTheWaitForTheCachesReadsItsChecksAgain(t *testing.T) {
	first, every := notSyncedFirst, notSyncedEvery
	notSyncedFirst, notSyncedEvery = 10*time.Millisecond, 10*time.Millisecond
	t.Cleanup(func() { notSyncedFirst, notSyncedEvery = first, every })

	released := doneChecker{ch: make(chan struct{})} // never done
	synced := doneChecker{ch: make(chan struct{})}
	close(synced.ch)
	var reads atomic.Int32
	checks := func() []cache.DoneChecker {
		if reads.Add(1) == 1 {
			return []cache.DoneChecker{released, synced} // before the slot was given up
		}
		return []cache.DoneChecker{synced}
	}
	var reports atomic.Int32
	done := make(chan bool, 1)
	go func() {
		done <- waitForCaches(t.Context(), "p", checks, func() map[string]cache.SharedIndexInformer { return nil }, nil,
			func(string) { reports.Add(1) })
	}()
	select {
	case ok := <-done:
		if !ok || reports.Load() != 1 {
			t.Errorf("waitForCaches = %v after %d reports, want true after one", ok, reports.Load())
		}
	case <-time.After(10 * time.Second):
		t.Fatalf("waitForCaches still waits for a released informer after %d reads of its checks", reads.Load())
	}
}
