package rollout

import (
	"strings"
	"testing"
	"time"
)

func TestDecide(t *testing.T) {
	t0 := time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)
	plan := Plan{
		Steps:          []Step{{Percent: 10, Pause: 30 * time.Second}, {Percent: 100}},
		HealthDeadline: time.Minute,
		Budget:         func(moved int) int { return moved / 10 },
	}
	bad := func(n int) []Unhealthy {
		out := make([]Unhealthy, n)
		for i := range out {
			out[i] = Unhealthy{Parent: "ns/p", Why: "Ready is False"}
		}
		return out
	}
	tests := []struct {
		name         string
		step         int
		healthySince time.Time
		health       Health
		now          time.Time
		want         Decision
	}{
		{"unhealthy parents before the deadline wait", 0, time.Time{}, Health{Moved: 5, Unhealthy: bad(1)}, t0.Add(59 * time.Second), Wait},
		{"healthy parents wait for the step's pause", 0, t0, Health{Moved: 5}, t0.Add(29 * time.Second), Wait},
		{"healthy parents past the pause advance", 0, t0, Health{Moved: 5}, t0.Add(30 * time.Second), Advance},
		{"the pause starts when the parents first are healthy", 0, time.Time{}, Health{Moved: 5}, t0.Add(50 * time.Second), Wait},
		{"no parent moved is healthy", 0, t0, Health{}, t0.Add(time.Hour), Advance},
		{"the last step done completes", 1, t0, Health{Moved: 50}, t0.Add(time.Second), Complete},
		{"past the deadline, more unhealthy than the budget fails", 0, time.Time{}, Health{Moved: 20, Unhealthy: bad(3)}, t0.Add(time.Minute), Fail},
		{"past the deadline, unhealthy within the budget are tolerated", 1, time.Time{}, Health{Moved: 20, Unhealthy: bad(2)}, t0.Add(time.Minute), Complete},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := &Progress{Record: Record{Phase: RollingOut, Step: tc.step, StepStarted: t0}, HealthySince: tc.healthySince}
			if got := Decide(p, plan, tc.health, tc.now); got != tc.want {
				t.Errorf("Decide = %s, want %s", got, tc.want)
			}
		})
	}
}

func TestDecideForgetsHealthAfterAnUnhealthyTick(t *testing.T) {
	t0 := time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)
	plan := Plan{Steps: []Step{{Percent: 10, Pause: 10 * time.Second}, {Percent: 100}}, HealthDeadline: time.Hour, Budget: func(int) int { return 0 }}
	p := &Progress{Record: Record{Phase: RollingOut, StepStarted: t0}}
	Decide(p, plan, Health{Moved: 1}, t0)
	Decide(p, plan, Health{Moved: 1, Unhealthy: []Unhealthy{{Parent: "ns/a", Why: "x"}}}, t0.Add(5*time.Second))
	if got := Decide(p, plan, Health{Moved: 1}, t0.Add(12*time.Second)); got != Wait {
		t.Errorf("healthy again for 0s of a 10s pause: %s, want Wait", got)
	}
	if got := Decide(p, plan, Health{Moved: 1}, t0.Add(22*time.Second)); got != Advance {
		t.Errorf("healthy again for 10s: %s, want Advance", got)
	}
}

func TestDescribeNamesTheFailingParents(t *testing.T) {
	h := Health{Moved: 8}
	for _, n := range []string{"ns/g", "ns/b", "ns/f", "ns/a", "ns/e", "ns/c", "ns/d"} {
		h.Unhealthy = append(h.Unhealthy, Unhealthy{Parent: n, Why: "Ready is False: Pending"})
	}
	got := Describe(h, 1)
	want := "7 of 8 moved parents unhealthy at the deadline (failure budget 1): ns/a (Ready is False: Pending), ns/b"
	if !strings.HasPrefix(got, want) || !strings.HasSuffix(got, "ns/e (Ready is False: Pending), and 2 more") {
		t.Errorf("Describe = %q", got)
	}
}
