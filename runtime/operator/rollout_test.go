package operator

import (
	"fmt"
	"strings"
	"testing"
	"time"

	testingclock "k8s.io/utils/clock/testing"

	"metacel.dev/metacel/runtime/rollout"
	"metacel.dev/metacel/runtime/source"
)

// A new version whose caches never sync (here its list of Secrets fails; in a cluster, a child
// resource its identity may not list) is rolled back at the step's health deadline: the parents
// moved to it were synced by no version, and the rollout waited for ever.
func TestARolloutWhoseNewVersionNeverSyncsIsRolledBackAtTheDeadline(t *testing.T) {
	s, clock, stable, ro := rollingOutToAnUnsyncableVersion(t)
	target := rollout.Version(ro.target.policy)
	eventually(t, 10*time.Second, "rolled back past the health deadline", func() error {
		if clock.HasWaiters() {
			clock.Step(rolloutTick) // the driver's tick: past the deadline after 60
		}
		s.mu.Lock()
		defer s.mu.Unlock()
		if stable.rolledBack != target || stable.rollout != nil {
			return fmt.Errorf("rolled back %q, rollout under way %v", stable.rolledBack, stable.rollout != nil)
		}
		return nil
	})
	if !strings.Contains(stable.message, "did not sync by the health deadline") {
		t.Errorf("message %q, want it to say the new version did not sync", stable.message)
	}
	if s.running["a"] != stable {
		t.Error("the stable version must keep running")
	}
}

// A rollout resumed at a step that started long ago (a runtime restarted mid-step: the record
// keeps when the step started) gives its new version's caches the whole health deadline to sync,
// counted from when the new version started here: it was rolled back at the first tick.
func TestAResumedRolloutGivesItsNewVersionTheDeadlineToSync(t *testing.T) {
	s, clock, stable, ro := rollingOutToAnUnsyncableVersion(t)
	s.mu.Lock()
	ro.progress.Record.StepStarted = clock.Now().Add(-time.Hour) // as a record read after a restart says
	s.mu.Unlock()
	// the driver's judgement of a tick, its new version's caches not synced yet
	if !s.rollouts.judgeNotSynced(t.Context(), "a", ro) {
		t.Fatal("the rollout ended")
	}
	s.mu.Lock()
	rolledBack, message := stable.rolledBack, stable.message
	s.mu.Unlock()
	if rolledBack != "" {
		t.Errorf("rolled back as soon as the new version started (%s)", message)
	}
}

// rollingOutToAnUnsyncableVersion is a policy set whose policy "a" rolls out from a version that
// synced to one whose caches never sync (its list of Secrets fails), the rollout driver on a fake
// clock: the set, the clock, the stable version and its rollout.
func rollingOutToAnUnsyncableVersion(t *testing.T) (*policySet, *testingclock.FakeClock, *running, *rolloutRun) {
	t.Helper()
	s := handOverSet(t)
	clock := testingclock.NewFakeClock(time.Now())
	s.rollouts.clock = clock
	version := func(children ...string) []byte {
		text := policyText("a", "namespaces") + "  childResources:\n    - {apiVersion: v1, resource: configmaps}\n"
		for _, c := range children {
			text += "    - {apiVersion: v1, resource: " + c + "}\n"
		}
		return []byte(text + "  rollout:\n    steps: [{percent: 50}, {percent: 100}]\n    healthDeadlineSeconds: 60\n")
	}
	s.update(source.Snapshot{Source: "dir", Units: []source.Unit{{Name: "a.yaml", Data: version()}}}, 1)
	stable := s.running["a"]
	waitClosed(t, stable.synced, "the first version's caches synced")
	s.update(source.Snapshot{Source: "dir", Units: []source.Unit{{Name: "a.yaml", Data: version(unsyncable)}}}, 1)
	s.mu.Lock()
	ro := stable.rollout
	s.mu.Unlock()
	if ro == nil {
		t.Fatal("the new version does not roll out")
	}
	return s, clock, stable, ro
}
