package operator

import (
	"context"
	"fmt"

	"k8s.io/klog/v2"

	"metacel.dev/metacel/runtime/rollout"
)

// With sharding, every replica runs a policy's rollout over the parents of its own slots, and the
// same UID buckets move at each step on every replica: each moves its share of them. One replica
// drives: the one that holds slot 0 (it writes the policies' status too). It judges each step
// with the health of the moved parents of every replica, which each reports in its shard Lease
// (rolloutReport, refreshed every tick, sent at each renewal), and writes the rollout record; the
// others follow the record, read every tick: they move to its step, and complete or roll back
// when it says so. A driver killed mid-step loses slot 0 once its Lease expires, and the new
// holder drives on from the record (its step's start kept, so its health deadline too). A replica
// writes the record only while it may write for slot 0 (the write fence checks it).

// rolloutReport is what a replica reports of a rollout: the moved parents of its slots at the
// step it is at, and how many of them are unhealthy, with a few for the message.
type rolloutReport struct {
	Target    string              `json:"target"`
	Step      int                 `json:"step"`
	Moved     int                 `json:"moved"`
	Unhealthy int                 `json:"unhealthy"`
	Examples  []rollout.Unhealthy `json:"examples,omitempty"`
}

// maxExamples is how many unhealthy parents a report names.
const maxExamples = 5

func reportOf(rec rollout.Record, h rollout.Health) rolloutReport {
	return rolloutReport{Target: rec.Target, Step: rec.Step, Moved: h.Moved, Unhealthy: len(h.Unhealthy), Examples: h.Unhealthy[:min(len(h.Unhealthy), maxExamples)]}
}

// drives reports whether this replica drives the rollouts: without sharding, yes.
func (s *shards) drives() bool { return s.writesStatus() }

// setRollout keeps what the next report says of a rollout (nil: none).
func (s *shards) setRollout(name string, r *rolloutReport) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if r == nil {
		delete(s.rollouts, name)
		return
	}
	if s.rollouts == nil {
		s.rollouts = map[string]rolloutReport{}
	}
	s.rollouts[name] = *r
}

// withOthers adds to h, this replica's health of a rollout at rec's step, what the other live
// replicas report of it: a replica that has not reached that step counts as one unhealthy parent
// (the step is not judged on parents that have not moved yet).
func (s *shards) withOthers(name string, rec rollout.Record, h rollout.Health) rollout.Health {
	h.Unhealthy = append([]rollout.Unhealthy(nil), h.Unhealthy...)
	for identity, body := range s.othersReports() {
		r, ok := body.Rollouts[name]
		switch {
		case !ok || r.Target != rec.Target:
			h.Unhealthy = append(h.Unhealthy, rollout.Unhealthy{Parent: "replica " + identity, Why: "has not started this version yet"})
		case r.Step != rec.Step:
			h.Unhealthy = append(h.Unhealthy, rollout.Unhealthy{Parent: "replica " + identity, Why: fmt.Sprintf("at step %d, not %d yet", r.Step+1, rec.Step+1)})
		default:
			h.Moved += r.Moved
			h.Unhealthy = append(h.Unhealthy, r.Examples...)
			for i := len(r.Examples); i < r.Unhealthy; i++ {
				h.Unhealthy = append(h.Unhealthy, rollout.Unhealthy{Parent: "~replica " + identity, Why: "another of its parents unhealthy"})
			}
		}
	}
	return h
}

// follow moves a rollout where its record says (rollout.Follow), on a replica that does not
// drive it; it returns false once the rollout has ended here.
func (d *rolloutDriver) follow(ctx context.Context, name string, ro *rolloutRun) bool {
	rec, err := d.records.Get(ctx, name)
	if err != nil {
		klog.FromContext(ctx).V(2).Info("Cannot read the rollout record; following it next tick", "err", err)
		return true
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	stable := d.running[name]
	if stable == nil || stable.rollout != ro {
		return false // stopped or replaced meanwhile
	}
	return !d.followLocked(ctx, name, stable, ro, rec)
}

// followLocked moves a rollout where rec, its record, says (rollout.Follow); it reports whether
// the rollout ended here (completed or rolled back).
func (d *rolloutDriver) followLocked(ctx context.Context, name string, stable *running, ro *rolloutRun, rec *rollout.Record) bool {
	switch rollout.Follow(rec, ro.progress.Record, len(ro.plan.Steps)) {
	case rollout.Advance:
		d.moveToStepLocked(ctx, stable, ro, rec.Step, rec.StepStarted)
	case rollout.Fail:
		d.rollBackLocked(ctx, name, stable, ro, rec.Message)
		return true
	case rollout.Complete:
		d.completeLocked(ctx, name, stable, ro)
		return true
	}
	return false
}

// catchUpLocked brings the rollout of old, a running version, where its record says before a
// newer version replaces it, on a replica that does not drive the rollouts: the driver may have
// completed it since this replica's last tick, and the new version then rolls out from the
// version the driver made stable, not from the one before. It returns the running version.
func (d *rolloutDriver) catchUpLocked(name string, old *running) *running {
	if shards := d.shards(); old == nil || old.rollout == nil || shards == nil || shards.drives() {
		return old
	}
	rec, err := d.records.Get(d.ctx, name)
	if err != nil {
		klog.FromContext(d.ctx).Error(err, "Cannot read the rollout record; the rollout under way is replaced as this replica has it", "policy", name)
		return old
	}
	d.followLocked(d.ctx, name, old, old.rollout, rec)
	return d.running[name]
}
