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

func TestParentsByConditionFollowTheCounts(t *testing.T) {
	m := newStateMetrics(prometheus.NewRegistry())
	m.setCounts(map[string]controller.Counts{"a": {Parents: 10, Ready: 7, Failing: 2}})
	if got := testutil.ToFloat64(m.ready.WithLabelValues("a")); got != 7 {
		t.Errorf("ready = %v, want 7", got)
	}
	if got := testutil.ToFloat64(m.notSynced.WithLabelValues("a")); got != 2 {
		t.Errorf("not synced = %v, want 2", got)
	}
	m.setStates(map[string]policystatus.State{"a": policystatus.Running})
	m.setStates(map[string]policystatus.State{})
	if n := testutil.CollectAndCount(m.ready) + testutil.CollectAndCount(m.notSynced); n != 0 {
		t.Errorf("%d series left of a policy gone", n)
	}
}
