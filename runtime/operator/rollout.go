package operator

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"

	"metacel.dev/metacel/runtime/compact"
	"metacel.dev/metacel/runtime/hashslot"
	"metacel.dev/metacel/runtime/policy"
	"metacel.dev/metacel/runtime/policystatus"
	"metacel.dev/metacel/runtime/rollout"
	"metacel.dev/metacel/runtime/source"
)

// A policy that declares spec.rollout moves its parents to a new version step by step: the
// version that was stable keeps its controller, now on the parents not moved, and the new one
// gets a controller of its own on the moved parents (controller.SetShare). A driver goroutine
// judges each step (rollout.Decide) from the moved parents' health, and moves the next share, or
// hands every parent to the new version (Complete), or back to the stable one (Fail). What a
// restart must know is in the policy's rollout record (package rollout), written before the
// shares move, so that a runtime killed at any point resumes where the record says.

// rolloutTick is how often a rollout's step is judged.
const rolloutTick = time.Second

// rolloutRun is a new version of a policy rolling out beside its running version.
type rolloutRun struct {
	target   *running
	plan     rollout.Plan
	policy   *policy.CompiledRollout
	progress rollout.Progress
	// percent is the share of parents on the target: those whose bucket is below it
	percent atomic.Int32
}

// moved reports whether a parent is on the target version now.
func (ro *rolloutRun) moved(uid types.UID) bool {
	return policy.RolloutBucket(uid) < int(ro.percent.Load())
}

func (ro *rolloutRun) notMoved(uid types.UID) bool { return !ro.moved(uid) }

// runRolloutLocked starts p when a rollout decides how: a policy rolling out now, or a version
// that declares spec.rollout. It returns false when p starts as before, at once.
func (s *policySet) runRolloutLocked(p *policy.Compiled, st *unitState, old *running, restart bool) bool {
	v := rollout.Version(p)
	s.records.NoteLoaded(p.Name(), v, inUse(old)...) // p comes from its source: a version a record may name
	if old != nil && old.rollout != nil {
		switch {
		case restart:
			// the CRDs changed: start again, on new informers, where the rollout was
			rec := old.rollout.progress.Record
			s.stopLocked(p.Name(), old)
			return s.startFromRecordLocked(p, st, &rec)
		case v == old.rollout.target.version:
			return true // the version rolling out, loaded again
		}
		s.abortRolloutLocked(old) // a newer version, or the stable one again
		if v == old.version {
			old.unit = st.unit.Name
			s.recordStableLocked(old)
			return true
		}
	}
	if p.Rollout == nil {
		return false
	}
	if old == nil {
		return s.startFromRecordLocked(p, st, nil)
	}
	if v == old.rolledBack {
		if restart { // the CRDs changed: the stable version starts again, on new informers
			rec := rollout.Record{Phase: rollout.RolledBack, Stable: old.version, StableUnit: old.unit, StableSource: string(old.source), Target: v, Message: old.message}
			s.stopLocked(p.Name(), old)
			return s.startFromRecordLocked(p, st, &rec)
		}
		return true // failed before: not tried again until the policy changes again
	}
	if v == old.version || restart {
		return false
	}
	s.startRolloutLocked(old, newRolloutRun(p, 0, s.clock.Now()), p, st.unit)
	return true
}

// startFromRecordLocked starts a policy that is not running, as its rollout record (rec, else
// the store's) says: the stable version alone, or beside the version it was rolling out to. It
// returns false when p starts at once (no record, or one about p as stable).
func (s *policySet) startFromRecordLocked(p *policy.Compiled, st *unitState, rec *rollout.Record) bool {
	if rec == nil {
		var err error
		if rec, err = s.records.Get(s.ctx, p.Name()); err != nil {
			klog.FromContext(s.ctx).Error(err, "Cannot read the rollout record; the policy starts at its newest version", "policy", p.Name())
		}
	}
	v := rollout.Version(p)
	if rec == nil || rec.Stable == v || p.Rollout == nil {
		return false
	}
	stable := s.trustedStableLocked(p, st, rec)
	if stable == nil {
		return false
	}
	unit := source.Unit{Name: rec.StableUnit, Data: []byte(rec.StableSource), ConfigMap: st.unit.ConfigMap}
	switch {
	case rec.Phase == rollout.RolledBack && rec.Target == v:
		if r := s.startLocked(stable, unit, nil, nil); r != nil {
			r.rolledBack, r.message = v, rec.Message
		}
	case rec.Phase == rollout.RollingOut && rec.Target == v:
		// the stable version starts without the parents that moved: were it to hold them until
		// the rollout starts, a sync of one would put its children back on the stable version
		ro := newRolloutRun(p, rec.Step, rec.StepStarted)
		if r := s.startLocked(stable, unit, nil, ro.notMoved); r != nil {
			s.startRolloutLocked(r, ro, p, st.unit)
		}
	default:
		// the policy changed while no runtime ran: roll the change out from the stable version
		ro := newRolloutRun(p, 0, s.clock.Now())
		if r := s.startLocked(stable, unit, nil, ro.notMoved); r != nil {
			s.startRolloutLocked(r, ro, p, st.unit)
		}
	}
	return true
}

// newRolloutRun is the rollout of p at step (started then): the parents that have moved to p.
func newRolloutRun(p *policy.Compiled, step int, started time.Time) *rolloutRun {
	ro := &rolloutRun{policy: p.Rollout, plan: planOf(p.Rollout)}
	ro.percent.Store(int32(p.Rollout.Share(step)))
	ro.progress.Record = rollout.Record{Phase: rollout.RollingOut, Target: rollout.Version(p), Step: step, StepStarted: started}
	return ro
}

// startRolloutLocked starts p beside the running stable version, at ro's step (newRolloutRun).
func (s *policySet) startRolloutLocked(stable *running, ro *rolloutRun, p *policy.Compiled, unit source.Unit) {
	rec := &ro.progress.Record
	rec.Stable, rec.StableUnit, rec.StableSource = stable.version, stable.unit, string(stable.source)
	step := rec.Step
	s.putRecordLocked(p.Name(), unit.ConfigMap, ro.progress.Record)
	stable.ctrl.SetShare(ro.notMoved) // the stable version lets go of the moved parents first
	ctrl, notSynced := s.newController(p, unit, nil, ro.moved)
	if err := ctrl.Watch(); err != nil {
		klog.FromContext(s.ctx).Error(err, "Cannot start the new version of a policy", "policy", p.Name())
		stable.ctrl.SetShare(nil)
		return
	}
	ro.target = s.goRun(p, ctrl, unit, nil, notSynced)
	stable.rollout = ro
	klog.FromContext(s.ctx).Info("Policy rolling out", "policy", p.Name(), "version", policystatus.ShortVersion(ro.target.version), "step", step+1, "steps", len(ro.plan.Steps), "percent", ro.percent.Load())
	s.rolloutEvent(unit, "Normal", "PolicyRollingOut", fmt.Sprintf("policy %q: version %s rolling out, step %d of %d: %d%% of parents",
		p.Name(), policystatus.ShortVersion(ro.target.version), step+1, len(ro.plan.Steps), ro.percent.Load()))
	go s.drive(p.Name(), ro)
}

// planOf is the rollout.Plan of a compiled spec.rollout.
func planOf(r *policy.CompiledRollout) rollout.Plan {
	steps := make([]rollout.Step, len(r.Steps))
	for i, st := range r.Steps {
		steps[i] = rollout.Step{Percent: st.Percent, Pause: st.Pause}
	}
	return rollout.Plan{Steps: steps, HealthDeadline: r.HealthDeadline, Budget: r.Budget}
}

// drive judges a rollout's step every tick until the rollout ends; with sharding, only the
// replica that drives judges, with every replica's health, and the others follow the record
// (shardrollout.go).
func (s *policySet) drive(name string, ro *rolloutRun) {
	ctx := klog.NewContext(s.ctx, klog.FromContext(s.ctx).WithValues("policy", name))
	t := s.clock.NewTicker(rolloutTick)
	defer t.Stop()
	if s.shards != nil {
		defer s.shards.setRollout(name, nil)
	}
	for {
		select {
		case <-ro.target.done:
			return
		case <-t.C():
		}
		if !ro.target.isSynced() {
			continue
		}
		h := s.healthOf(ctx, ro)
		if s.shards != nil {
			rec := s.recordOf(ro)
			report := reportOf(rec, h)
			s.shards.setRollout(name, &report)
			if !s.shards.drives() {
				if !s.follow(ctx, name, ro) {
					return
				}
				continue
			}
			h = s.shards.withOthers(name, rec, h)
		}
		if !s.judge(ctx, name, ro, h) {
			return
		}
	}
}

// recordOf returns a rollout's record as this replica has it.
func (s *policySet) recordOf(ro *rolloutRun) rollout.Record {
	s.mu.Lock()
	defer s.mu.Unlock()
	return ro.progress.Record
}

// healthOf judges the parents moved to the target: healthy once the target's controller has
// synced them and its health rule holds.
func (s *policySet) healthOf(ctx context.Context, ro *rolloutRun) rollout.Health {
	var h rollout.Health
	for _, m := range ro.target.ctrl.HeldParents() {
		h.Moved++
		key := klog.KObj(m).String()
		why := ""
		if !ro.target.ctrl.SyncedParent(m) {
			why = "not synced by the new version yet"
		} else if u, err := compact.Unstructured(m); err != nil {
			why = err.Error()
		} else if ok, reason, err := ro.policy.Healthy(ctx, u); err != nil {
			why = "health rule: " + err.Error()
		} else if !ok {
			why = reason
		}
		if why != "" {
			h.Unhealthy = append(h.Unhealthy, rollout.Unhealthy{Parent: key, Why: why})
		}
	}
	return h
}

// judge acts on a tick's decision; it returns false once the rollout has ended.
func (s *policySet) judge(ctx context.Context, name string, ro *rolloutRun, h rollout.Health) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	stable := s.running[name]
	if stable == nil || stable.rollout != ro {
		return false // stopped or replaced meanwhile
	}
	switch rollout.Decide(&ro.progress, ro.plan, h, s.clock.Now()) {
	case rollout.Advance:
		s.advanceLocked(ctx, name, stable, ro)
	case rollout.Complete:
		s.completeLocked(ctx, name, stable, ro)
		return false
	case rollout.Fail:
		s.failLocked(ctx, name, stable, ro, rollout.Describe(h, ro.plan.Budget(h.Moved)))
		return false
	case rollout.Wait:
	}
	return true
}

// advanceLocked moves the next step's parents to the target: recorded first, then the stable
// version lets go of them, then the target takes them.
func (s *policySet) advanceLocked(ctx context.Context, name string, stable *running, ro *rolloutRun) {
	next := ro.progress.Record
	next.Step++
	next.StepStarted = s.clock.Now()
	s.putRecordLocked(name, ro.target.configMap, next)
	s.moveToStepLocked(ctx, stable, ro, next.Step, next.StepStarted)
	s.rolloutEventOf(stable, "Normal", "PolicyRollingOut", fmt.Sprintf("policy %q: version %s, step %d of %d: %d%% of parents",
		name, policystatus.ShortVersion(next.Target), next.Step+1, len(ro.plan.Steps), ro.percent.Load()))
}

// moveToStepLocked moves the parents of a step (started then) to the target: the stable version
// lets go of them first.
func (s *policySet) moveToStepLocked(ctx context.Context, stable *running, ro *rolloutRun, step int, started time.Time) {
	rec := &ro.progress.Record
	rec.Step, rec.StepStarted = step, started
	ro.progress.HealthySince = time.Time{}
	ro.percent.Store(int32(ro.plan.Steps[step].Percent))
	stable.ctrl.SetShare(ro.notMoved)
	ro.target.ctrl.SetShare(ro.moved)
	klog.FromContext(ctx).Info("Policy rollout step", "version", policystatus.ShortVersion(rec.Target), "step", step+1, "steps", len(ro.plan.Steps), "percent", ro.percent.Load())
}

// completeLocked hands every parent to the target, which becomes the running version.
func (s *policySet) completeLocked(ctx context.Context, name string, stable *running, ro *rolloutRun) {
	target := ro.target
	target.generation = stable.generation + 1
	stable.rollout = nil
	target.ctrl.TakeAll(ctx, stable.policy)
	stable.stop()
	s.running[name] = target
	s.recordStableLocked(target)
	s.metrics.loaded(name, target.unit, target.generation)
	klog.FromContext(ctx).Info("Policy rolled out", "version", policystatus.ShortVersion(target.version), "generation", target.generation)
	s.rolloutEventOf(target, "Normal", "PolicyRolledOut", fmt.Sprintf("policy %q: version %s serves every parent (generation %d)", name, policystatus.ShortVersion(target.version), target.generation))
}

// failLocked moves every parent back to the stable version, and records the target as failed.
func (s *policySet) failLocked(ctx context.Context, name string, stable *running, ro *rolloutRun, why string) {
	rec := ro.progress.Record
	msg := fmt.Sprintf("policy %q: version %s rolled back at step %d of %d: %s", name, policystatus.ShortVersion(rec.Target), rec.Step+1, len(ro.plan.Steps), why)
	s.putRecordLocked(name, ro.target.configMap, rollout.Record{
		Phase: rollout.RolledBack, Stable: rec.Stable, StableUnit: rec.StableUnit, StableSource: rec.StableSource,
		Target: rec.Target, Message: msg,
	})
	s.rollBackLocked(ctx, name, stable, ro, msg)
}

// rollBackLocked moves every parent back to the stable version, as the record says (msg).
func (s *policySet) rollBackLocked(ctx context.Context, name string, stable *running, ro *rolloutRun, msg string) {
	rec := ro.progress.Record
	stable.rollout, stable.rolledBack, stable.message = nil, rec.Target, msg
	ro.target.stop()
	stable.ctrl.TakeAll(s.ctx, ro.target.policy)
	klog.FromContext(ctx).Error(nil, "Policy rollout failed; rolled back", "policy", name, "version", policystatus.ShortVersion(rec.Target), "message", msg)
	s.rolloutEventOf(ro.target, "Warning", "PolicyRolloutFailed", msg)
}

// abortRolloutLocked ends a rollout that a newer version replaces: every parent goes back to the
// stable version, which the caller replaces or keeps.
func (s *policySet) abortRolloutLocked(stable *running) {
	ro := stable.rollout
	stable.rollout = nil
	ro.target.stop()
	stable.ctrl.TakeAll(s.ctx, ro.target.policy)
	klog.FromContext(s.ctx).Info("Policy rollout replaced by a newer version", "policy", stable.policy.Name(), "version", policystatus.ShortVersion(ro.target.version))
}

// recordStableLocked records r as its policy's stable version.
func (s *policySet) recordStableLocked(r *running) {
	s.records.NoteLoaded(r.policy.Name(), r.version) // every caller's r comes from its source
	s.putRecordLocked(r.policy.Name(), r.configMap, rollout.Record{Phase: rollout.Stable, Stable: r.version, StableUnit: r.unit, StableSource: string(r.source)})
}

// putRecordLocked writes a policy's record, once the versions it names are listed as loaded on
// the ConfigMap the policy loads from (ref), which a restarted runtime checks the record against
// (rolloutrecord.go); with sharding, only the replica that drives the rollouts does, as a write
// for slot 0 (the write fence lets it through only while it holds it).
func (s *policySet) putRecordLocked(name string, ref *corev1.ObjectReference, rec rollout.Record) {
	ctx := s.ctx
	if s.shards != nil {
		if !s.shards.drives() {
			return
		}
		ctx = hashslot.WithSlot(ctx, 0)
	}
	if err := s.records.Anchor(ctx, ref, name, rec.Stable, rec.Target); err != nil {
		klog.FromContext(s.ctx).Error(err, "Cannot list the loaded versions on the policy's ConfigMap; a restart will not trust the rollout record", "policy", name)
	}
	if err := s.records.Put(ctx, name, rec); err != nil {
		klog.FromContext(s.ctx).Error(err, "Cannot write the rollout record; a restart may not resume where the policy is", "policy", name)
	}
}

// rolloutEventOf records an event of a rollout on the ConfigMap a running version came from: with
// sharding, only the replica that drives the rollouts does (one event, not one per replica).
func (s *policySet) rolloutEventOf(r *running, typ, reason, note string) {
	s.rolloutEvent(source.Unit{Name: r.unit, ConfigMap: r.configMap}, typ, reason, note)
}

func (s *policySet) rolloutEvent(unit source.Unit, typ, reason, note string) {
	if s.shards.drives() {
		s.event(unit, typ, reason, note)
	}
}
