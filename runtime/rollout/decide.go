package rollout

import (
	"fmt"
	"sort"
	"strings"
	"time"
)

// Step is one step of a rollout, as the policy declares it.
type Step struct {
	// Percent of the parents on the new version once the step is done.
	Percent int
	// Pause is how long the step's parents must stay healthy before the next step.
	Pause time.Duration
}

// Plan is a policy's rollout: its steps, how long a step's parents have to become healthy, and
// how many may stay unhealthy at that deadline (Budget, of the parents moved so far).
type Plan struct {
	Steps          []Step
	HealthDeadline time.Duration
	Budget         func(moved int) int
}

// Health is what a tick found of the parents moved so far.
type Health struct {
	Moved int
	// Unhealthy are the moved parents not healthy, with why.
	Unhealthy []Unhealthy
}

// Unhealthy is one moved parent that is not healthy.
type Unhealthy struct {
	Parent, Why string
}

// Decision is what to do after a tick.
type Decision int

const (
	// Wait: the step is not done.
	Wait Decision = iota
	// Advance: the step is done; move to the next one.
	Advance
	// Complete: the last step is done; the target serves every parent.
	Complete
	// Fail: past the deadline, more parents are unhealthy than the budget allows.
	Fail
)

func (d Decision) String() string {
	return [...]string{"Wait", "Advance", "Complete", "Fail"}[d]
}

// Progress is a rollout in memory: its record, and since when the current step's parents have
// been healthy (not kept: after a restart, a step's pause starts again).
type Progress struct {
	Record       Record
	HealthySince time.Time
}

// Decide judges the current step of a rollout at now: done once every moved parent is healthy
// and has stayed so for the step's pause; at the step's deadline, unhealthy parents within the
// budget are tolerated, more fail the rollout.
func Decide(p *Progress, plan Plan, h Health, now time.Time) Decision {
	healthy := len(h.Unhealthy) == 0
	if !healthy && !now.Before(p.Record.StepStarted.Add(plan.HealthDeadline)) {
		if len(h.Unhealthy) > plan.Budget(h.Moved) {
			return Fail
		}
		healthy = true // tolerated: within the failure budget
	}
	if !healthy {
		p.HealthySince = time.Time{}
		return Wait
	}
	if p.HealthySince.IsZero() {
		p.HealthySince = now
	}
	if now.Sub(p.HealthySince) < plan.Steps[p.Record.Step].Pause {
		return Wait
	}
	if p.Record.Step == len(plan.Steps)-1 {
		return Complete
	}
	return Advance
}

// Describe says why a rollout failed, naming up to five of the unhealthy parents.
func Describe(h Health, budget int) string {
	const most = 5
	bad := append([]Unhealthy(nil), h.Unhealthy...)
	sort.Slice(bad, func(i, j int) bool { return bad[i].Parent < bad[j].Parent })
	var parts []string
	for i, u := range bad {
		if i == most {
			parts = append(parts, fmt.Sprintf("and %d more", len(bad)-most))
			break
		}
		parts = append(parts, fmt.Sprintf("%s (%s)", u.Parent, u.Why))
	}
	return fmt.Sprintf("%d of %d moved parents unhealthy at the deadline (failure budget %d): %s",
		len(bad), h.Moved, budget, strings.Join(parts, ", "))
}
