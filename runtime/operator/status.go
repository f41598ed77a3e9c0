package operator

import (
	"maps"
	"strings"

	"metacel.dev/metacel/runtime/controller"
	"metacel.dev/metacel/runtime/policystatus"
)

// publishStatus tells the status reporter each policy's state, per ConfigMap (package
// policystatus writes it as the ConfigMap's labels). It runs on the policy set's goroutine: it
// reads the units, which only that goroutine changes. A status depends only on the policies'
// state, so a write it causes (a snapshot of the same ConfigMap) changes nothing.
func (s *policySet) publishStatus() {
	counts := s.ctrls.localCounts()
	s.metrics.setParents(counts)
	s.metrics.states.setCounts(counts)
	s.metrics.states.setStates(s.policyStates())
	if s.shards != nil {
		s.shards.setCounts(counts)
	}
	if !s.shards.writesStatus() {
		s.status.Reset() // the replica that holds slot 0 writes now: nothing stale put back
		s.published = nil
		return
	}
	if s.status == nil {
		return
	}
	if s.shards != nil {
		counts = maps.Clone(counts)
		for name, c := range s.shards.othersCounts() {
			counts[name] = add(counts[name], c)
		}
	}
	now := map[[2]string]bool{}
	for key, status := range s.statusesByConfigMap(counts) {
		now[key] = true
		s.status.Set(key[0], key[1], status)
	}
	for key := range s.published {
		if !now[key] {
			s.status.Forget(key[0], key[1])
		}
	}
	s.published = now
}

// statusesByConfigMap is the state of each policy of each policy ConfigMap, by ConfigMap and
// policy name. Two keys of one ConfigMap that define one policy say one state: the running
// one's, else the first by unit name's (the other's conflict is an event on the ConfigMap), never
// each in turn.
func (s *policySet) statusesByConfigMap(counts map[string]controller.Counts) map[[2]string]policystatus.Status {
	out := map[[2]string]policystatus.Status{}
	for _, st := range byUnitName(s.units) {
		if st.unit.ConfigMap == nil {
			continue
		}
		for _, name := range st.policies() {
			key := [2]string{st.unit.ConfigMap.Name, name}
			if _, said := out[key]; said && !s.ctrls.runsFrom(name, st.unit.Name) {
				continue
			}
			out[key] = s.statusOf(st, name, counts[name])
		}
	}
	return out
}

// setParents sets metacel_policy_parents: the parents each policy's controllers sync here.
func (m *policyMetrics) setParents(counts map[string]controller.Counts) {
	for name, c := range counts {
		m.parents.WithLabelValues(name).Set(float64(c.Parents))
	}
}

// policies names the policies of a unit: those of its last good version, else the unit's own
// name (a unit that never loaded).
func (st *unitState) policies() []string {
	if len(st.good) == 0 {
		return []string{unitKey(st.unit.Name)}
	}
	return names(st.good)
}

// unitKey is the last part of a unit's name: a ConfigMap's data key.
func unitKey(name string) string {
	return name[strings.LastIndex(name, "/")+1:]
}

// statusOf is the state of one policy of a unit.
// counts are the policy's parents, in this process and, with sharding, the other replicas.
func (s *policySet) statusOf(st *unitState, name string, counts controller.Counts) policystatus.Status {
	s.ctrls.mu.Lock()
	defer s.ctrls.mu.Unlock()
	r := s.ctrls.running[name]
	if r != nil && r.unit != st.unit.Name && (r.rollout == nil || r.rollout.target.unit != st.unit.Name) {
		r = nil // another unit's policy of that name runs
	}
	out := policystatus.Status{State: policystatus.Running}
	if r != nil {
		out.Version = policystatus.ShortVersion(r.version)
		out.Parents, out.Ready, out.Failing = counts.Parents, counts.Ready, counts.Failing
	}
	problem := strings.TrimPrefix(strings.TrimPrefix(st.reported, "PolicyInvalid: "), "PolicyWaiting: ")
	switch {
	case st.failed:
		out.State, out.LastError = policystatus.Invalid, problem
	case st.waiting:
		out.State, out.LastError = policystatus.Waiting, problem
	case r == nil:
		out.State, out.LastError = policystatus.Invalid, conflictOf(st, name)
	case r.rollout != nil:
		out.State = policystatus.RollingOut
		out.Step, out.Steps = r.rollout.progress.Record.Step+1, len(r.rollout.plan.Steps)
	case r.rolledBack != "":
		out.State, out.LastError = policystatus.RolledBack, r.message
	case !r.isSynced():
		out.State = policystatus.NotSynced
		if msg := r.notSynced.Load(); msg != nil {
			out.LastError = *msg
		}
	}
	if out.State == policystatus.Running && out.LastError == "" {
		out.LastError = st.recordRejected // it runs, but not the rollout its record said
	}
	if out.LastError == "" && s.installer != nil {
		out.LastError = s.installer.conversion.lastFailure(name)
	}
	return out
}

// conflictOf is the conflict that keeps a unit's policy of that name from running.
func conflictOf(st *unitState, name string) string {
	if msg, ok := st.conflicts[name]; ok {
		return msg
	}
	return "not running"
}

func add(a, b controller.Counts) controller.Counts {
	return controller.Counts{Parents: a.Parents + b.Parents, Ready: a.Ready + b.Ready, Failing: a.Failing + b.Failing}
}
