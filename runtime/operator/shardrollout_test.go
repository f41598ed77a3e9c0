package operator

import (
	"encoding/json"
	"testing"

	"metacel.dev/metacel/runtime/rollout"
)

// The replica driving a sharded rollout judges each step with every replica's moved parents:
// its own health plus what the others report of the same version at the same step; a replica
// not there yet counts as one unhealthy parent, so a step is not judged on parents not moved.
func TestAShardedRolloutIsJudgedOnEveryReplicasParents(t *testing.T) {
	rec := rollout.Record{Target: "v2", Step: 1}
	own := rollout.Health{Moved: 10, Unhealthy: []rollout.Unhealthy{{Parent: "ns/a", Why: "Pending"}}}
	report := func(r rolloutReport) string {
		b, _ := json.Marshal(shardReportBody{Rollouts: map[string]rolloutReport{"myapp": r}})
		return string(b)
	}
	tests := []struct {
		name          string
		others        map[string]string
		moved, broken int
	}{
		{"alone", nil, 10, 1},
		{"others at the step, healthy", map[string]string{"b": report(rolloutReport{Target: "v2", Step: 1, Moved: 7})}, 17, 1},
		{"others at the step, some unhealthy, a few named", map[string]string{
			"b": report(rolloutReport{Target: "v2", Step: 1, Moved: 7, Unhealthy: 7, Examples: []rollout.Unhealthy{{Parent: "ns/b", Why: "Pending"}}}),
		}, 17, 8},
		{"another still at the step before", map[string]string{"b": report(rolloutReport{Target: "v2", Step: 0, Moved: 3})}, 10, 2},
		{"another on another version", map[string]string{"b": report(rolloutReport{Target: "v1", Step: 1, Moved: 3})}, 10, 2},
		{"another reporting no rollout", map[string]string{"b": `{"counts":{}}`}, 10, 2},
		{"this replica's own report is not counted twice", map[string]string{"me": report(rolloutReport{Target: "v2", Step: 1, Moved: 10})}, 10, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := &shards{identity: "me", reports: func() map[string]string { return tt.others }}
			h := s.withOthers("myapp", rec, own)
			if h.Moved != tt.moved || len(h.Unhealthy) != tt.broken {
				t.Errorf("moved %d, unhealthy %d (%v); want %d, %d", h.Moved, len(h.Unhealthy), h.Unhealthy, tt.moved, tt.broken)
			}
			if len(own.Unhealthy) != 1 {
				t.Error("withOthers changed its argument's list")
			}
		})
	}
}

func TestAReportNamesAFewUnhealthyParents(t *testing.T) {
	h := rollout.Health{Moved: 9}
	for range 9 {
		h.Unhealthy = append(h.Unhealthy, rollout.Unhealthy{Parent: "ns/p", Why: "Pending"})
	}
	r := reportOf(rollout.Record{Target: "v2", Step: 2}, h)
	if r.Unhealthy != 9 || len(r.Examples) != maxExamples || r.Step != 2 || r.Target != "v2" || r.Moved != 9 {
		t.Errorf("report %+v", r)
	}
}
