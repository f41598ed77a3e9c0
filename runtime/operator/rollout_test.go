package operator

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"k8s.io/client-go/kubernetes/fake"
	testingclock "k8s.io/utils/clock/testing"

	"metacel.dev/metacel/runtime/policystatus"
	"metacel.dev/metacel/runtime/rollout"
	"metacel.dev/metacel/runtime/source"
)

// A new version whose caches never sync (here its list of Secrets fails; in a cluster, a child
// resource its identity may not list) is rolled back at the step's health deadline: the parents
// moved to it were synced by no version, and the rollout waited for ever.
func TestARolloutWhoseNewVersionNeverSyncsIsRolledBackAtTheDeadline(t *testing.T) {
	s, clock, stable, ro := rollingOutToAnUnsyncableVersion(t)
	waitRolledBack(t, s, clock, stable, rollout.Version(ro.target.policy))
	if !strings.Contains(stable.message, "did not sync by the health deadline") {
		t.Errorf("message %q, want it to say the new version did not sync", stable.message)
	}
	if s.ctrls.running["a"] != stable {
		t.Error("the stable version must keep running")
	}
}

// A version rolled back stayed RolledBack for good: reverting the ConfigMap to the stable
// version's text left the policy RolledBack (the alert MetacelPolicyRolledBack kept firing) and its
// rollout record RolledBack, and applying the failed version again after the revert did nothing,
// where the runbook says the rollout starts anew. Now the revert makes it Running with a Stable
// record, and the failed version applied again rolls out.
func TestRevertingARolledBackPolicyClearsItAndReapplyingRollsOutAnew(t *testing.T) {
	s, clock, stable, ro := rollingOutToAnUnsyncableVersion(t)
	s.ctrls.mu.Lock()
	s.rollouts.records = rollout.NewStore(fake.NewClientset(), "metacel-system")
	s.ctrls.mu.Unlock()
	failed := ro.target.source
	waitRolledBack(t, s, clock, stable, rollout.Version(ro.target.policy))
	apply := func(text []byte) {
		s.update(source.Snapshot{Source: "dir", Units: []source.Unit{{Name: "a.yaml", Data: text}}}, 1)
	}
	steps := []struct {
		name        string
		text        []byte
		wantState   policystatus.State
		wantRecord  rollout.Phase
		wantRollout bool
	}{
		{"the failed version again, with no revert: not tried again", failed, policystatus.RolledBack, rollout.RolledBack, false},
		{"reverted to the stable version: Running", stable.source, policystatus.Running, rollout.Stable, false},
		{"the failed version applied again: it rolls out anew", failed, policystatus.RollingOut, rollout.RollingOut, true},
	}
	for _, step := range steps {
		t.Run(step.name, func(t *testing.T) {
			apply(step.text)
			if got := s.statusOf(s.units["a.yaml"], "a", s.ctrls.localCounts()["a"]); got.State != step.wantState {
				t.Errorf("state %s (%s), want %s", got.State, got.LastError, step.wantState)
			}
			rec, err := s.rollouts.records.Get(t.Context(), "a")
			if err != nil || rec == nil || rec.Phase != step.wantRecord {
				t.Errorf("rollout record %+v (%v), want phase %s", rec, err, step.wantRecord)
			}
			s.ctrls.mu.Lock()
			defer s.ctrls.mu.Unlock()
			if r := s.ctrls.running["a"]; r != stable || (r.rollout != nil) != step.wantRollout {
				t.Errorf("the stable version runs: %v; a rollout under way: %v, want %v", r == stable, r.rollout != nil, step.wantRollout)
			}
		})
	}
}

// A rollout resumed at a step that started long ago (a runtime restarted mid-step: the record
// keeps when the step started) gives its new version's caches the whole health deadline to sync,
// counted from when the new version started here: it was rolled back at the first tick.
func TestAResumedRolloutGivesItsNewVersionTheDeadlineToSync(t *testing.T) {
	s, clock, stable, ro := rollingOutToAnUnsyncableVersion(t)
	s.ctrls.mu.Lock()
	ro.progress.Record.StepStarted = clock.Now().Add(-time.Hour) // as a record read after a restart says
	s.ctrls.mu.Unlock()
	// the driver's judgement of a tick, its new version's caches not synced yet
	if !s.rollouts.judgeNotSynced(t.Context(), "a", ro) {
		t.Fatal("the rollout ended")
	}
	s.ctrls.mu.Lock()
	rolledBack, message := stable.rolledBack, stable.message
	s.ctrls.mu.Unlock()
	if rolledBack != "" {
		t.Errorf("rolled back as soon as the new version started (%s)", message)
	}
}

// waitRolledBack steps the rollout driver's clock until the stable version has rolled target back.
func waitRolledBack(t *testing.T, s *policySet, clock *testingclock.FakeClock, stable *running, target string) {
	t.Helper()
	eventually(t, 10*time.Second, "rolled back past the health deadline", func() error {
		if clock.HasWaiters() {
			clock.Step(rolloutTick) // the driver's tick: past the deadline after 60
		}
		s.ctrls.mu.Lock()
		defer s.ctrls.mu.Unlock()
		if stable.rolledBack != target || stable.rollout != nil {
			return fmt.Errorf("rolled back %q, rollout under way %v", stable.rolledBack, stable.rollout != nil)
		}
		return nil
	})
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
	stable := s.ctrls.running["a"]
	waitClosed(t, stable.synced, "the first version's caches synced")
	s.update(source.Snapshot{Source: "dir", Units: []source.Unit{{Name: "a.yaml", Data: version(unsyncable)}}}, 1)
	s.ctrls.mu.Lock()
	ro := stable.rollout
	s.ctrls.mu.Unlock()
	if ro == nil {
		t.Fatal("the new version does not roll out")
	}
	return s, clock, stable, ro
}
