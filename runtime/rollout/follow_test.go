package rollout

import "testing"

func TestAFollowerMovesOnlyBetweenTheVersionsItLoaded(t *testing.T) {
	local := Record{Phase: RollingOut, Stable: "v1", Target: "v2", Step: 0}
	tests := []struct {
		name string
		rec  *Record
		want Decision
	}{
		{"no record", nil, Wait},
		{"the driver has not started this version", &Record{Phase: Stable, Stable: "v1"}, Wait},
		{"the driver at the same step", &Record{Phase: RollingOut, Stable: "v1", Target: "v2", Step: 0}, Wait},
		{"the driver at the next step", &Record{Phase: RollingOut, Stable: "v1", Target: "v2", Step: 1}, Advance},
		{"a step past the plan", &Record{Phase: RollingOut, Stable: "v1", Target: "v2", Step: 3}, Wait},
		{"a negative step", &Record{Phase: RollingOut, Stable: "v1", Target: "v2", Step: -1}, Wait},
		{"the driver completed: the target is stable, no target left", &Record{Phase: Stable, Stable: "v2"}, Complete},
		{"the driver rolled back", &Record{Phase: RolledBack, Stable: "v1", Target: "v2"}, Fail},
		{"a rollback of another version", &Record{Phase: RolledBack, Stable: "v1", Target: "v3"}, Wait},
		{"a record from another stable version", &Record{Phase: RolledBack, Stable: "forged", Target: "v2"}, Wait},
		{"a step of a record from another stable version", &Record{Phase: RollingOut, Stable: "forged", Target: "v2", Step: 2}, Wait},
		{"a rollout to a version not loaded here", &Record{Phase: RollingOut, Stable: "v1", Target: "v9", Step: 2}, Wait},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Follow(tt.rec, local, 3); got != tt.want {
				t.Errorf("Follow = %v, want %v", got, tt.want)
			}
		})
	}
}
