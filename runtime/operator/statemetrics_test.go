package operator

import (
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"metacel.dev/metacel/runtime/controller"
	"metacel.dev/metacel/runtime/policystatus"
)

// metacel_policy_state holds one series per policy, its current state: a state left, or a policy
// gone, leaves no series behind; the parents by condition follow the counts.
func TestPolicyStateMetricsFollowTheStates(t *testing.T) {
	for _, tc := range []struct {
		name  string
		ticks []map[string]policystatus.State
		want  string
	}{
		{"a running policy", []map[string]policystatus.State{{"a": policystatus.Running}},
			`metacel_policy_state{policy="a",state="Running"} 1`},
		{"a policy rolled back, then running again",
			[]map[string]policystatus.State{{"a": policystatus.RolledBack}, {"a": policystatus.Running}},
			`metacel_policy_state{policy="a",state="Running"} 1`},
		{"a policy removed", []map[string]policystatus.State{{"a": policystatus.Invalid, "b": policystatus.Running}, {"b": policystatus.Running}},
			`metacel_policy_state{policy="b",state="Running"} 1`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			reg := prometheus.NewRegistry()
			m := newStateMetrics(reg)
			for _, states := range tc.ticks {
				m.setStates(states)
			}
			want := "# HELP metacel_policy_state 1 for a policy's state in this process: Running, RollingOut, Waiting, NotSynced, RolledBack or Invalid.\n" +
				"# TYPE metacel_policy_state gauge\n" + tc.want + "\n"
			if err := testutil.GatherAndCompare(reg, strings.NewReader(want), "metacel_policy_state"); err != nil {
				t.Error(err)
			}
		})
	}
}

// The parents by condition follow the counts of the policies that run here, tick by tick
// (publishStatus: the counts, then the states). A policy that stopped but stays in its unit
// (state Waiting: its CRD was deleted) kept its last counts, and MetacelParentsNotSynced kept
// firing for parents no controller syncs; now its series go, as a removed policy's do.
func TestParentsByConditionFollowTheCounts(t *testing.T) {
	running := map[string]controller.Counts{"a": {Parents: 10, Ready: 7, Failing: 2}}
	for _, tc := range []struct {
		name                  string
		counts                map[string]controller.Counts
		states                map[string]policystatus.State
		wantReady, wantFailed float64
		wantSeries            int
	}{
		{"running", running, map[string]policystatus.State{"a": policystatus.Running}, 7, 2, 2},
		{"stopped, waiting in its unit", map[string]controller.Counts{}, map[string]policystatus.State{"a": policystatus.Waiting}, 0, 0, 0},
		{"removed", map[string]controller.Counts{}, map[string]policystatus.State{}, 0, 0, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := newStateMetrics(prometheus.NewRegistry())
			m.setCounts(running) // the tick before: it ran
			m.setStates(map[string]policystatus.State{"a": policystatus.Running})
			m.setCounts(tc.counts)
			m.setStates(tc.states)
			if n := testutil.CollectAndCount(m.ready) + testutil.CollectAndCount(m.notSynced); n != tc.wantSeries {
				t.Errorf("%d series of parents by condition, want %d", n, tc.wantSeries)
			}
			if tc.wantSeries == 0 {
				return
			}
			if got := testutil.ToFloat64(m.ready.WithLabelValues("a")); got != tc.wantReady {
				t.Errorf("ready = %v, want %v", got, tc.wantReady)
			}
			if got := testutil.ToFloat64(m.notSynced.WithLabelValues("a")); got != tc.wantFailed {
				t.Errorf("not synced = %v, want %v", got, tc.wantFailed)
			}
		})
	}
}
