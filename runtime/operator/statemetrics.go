package operator

import (
	"github.com/prometheus/client_golang/prometheus"

	"metacel.dev/metacel/runtime/controller"
	"metacel.dev/metacel/runtime/policystatus"
)

// stateMetrics are the gauges the alerts of deploy/monitoring read: each policy's state, as its
// ConfigMap's status labels say it, and its parents by condition.
type stateMetrics struct {
	state            *prometheus.GaugeVec
	ready, notSynced *prometheus.GaugeVec
	published        map[string]policystatus.State
	// counted are the policies whose parents by condition were set last (setCounts)
	counted map[string]controller.Counts
}

func newStateMetrics(reg prometheus.Registerer) *stateMetrics {
	m := &stateMetrics{
		state: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "metacel_policy_state",
			Help: "1 for a policy's state in this process: Running, RollingOut, Waiting, NotSynced, RolledBack or Invalid.",
		}, []string{"policy", "state"}),
		ready: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "metacel_policy_parents_ready",
			Help: "Parents a policy's controllers sync in this process that have the condition Ready=True.",
		}, []string{"policy"}),
		notSynced: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "metacel_policy_parents_not_synced",
			Help: "Parents a policy's controllers sync in this process that have the condition Synced=False.",
		}, []string{"policy"}),
		published: map[string]policystatus.State{},
	}
	reg.MustRegister(m.state, m.ready, m.notSynced)
	return m
}

// setCounts sets the parents by condition of the policies counted (those that run here), and
// removes them for the others: a policy stopped, though still in its unit (it waits for a CRD),
// syncs no parent, and its last counts would keep MetacelParentsNotSynced firing.
func (m *stateMetrics) setCounts(counts map[string]controller.Counts) {
	for name := range m.counted {
		if _, ok := counts[name]; !ok {
			m.ready.DeleteLabelValues(name)
			m.notSynced.DeleteLabelValues(name)
		}
	}
	for name, c := range counts {
		m.ready.WithLabelValues(name).Set(float64(c.Ready))
		m.notSynced.WithLabelValues(name).Set(float64(c.Failing))
	}
	m.counted = counts
}

// setStates makes metacel_policy_state say states: the state of every policy of a unit, and
// nothing of a policy no longer there (whose parents by condition setCounts has removed: it is
// counted no more).
func (m *stateMetrics) setStates(states map[string]policystatus.State) {
	for name, was := range m.published {
		if now, ok := states[name]; !ok || now != was {
			m.state.DeleteLabelValues(name, string(was))
		}
	}
	for name, st := range states {
		m.state.WithLabelValues(name, string(st)).Set(1)
	}
	m.published = states
}

// policyStates is the state of every policy of every unit, as publishStatus reports it; of two
// units that hold a policy of one name, the one not running says it.
func (s *policySet) policyStates() map[string]policystatus.State {
	out := map[string]policystatus.State{}
	for _, st := range s.units {
		for _, name := range st.policies() {
			state := s.statusOf(st, name, controller.Counts{}).State
			if was, ok := out[name]; !ok || was == policystatus.Running {
				out[name] = state
			}
		}
	}
	return out
}
