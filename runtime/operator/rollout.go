package operator

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"metacel.dev/metacel/runtime/compact"
	"metacel.dev/metacel/runtime/controller"
	"metacel.dev/metacel/runtime/hashslot"
	"metacel.dev/metacel/runtime/kinds"
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

// rolloutDriver drives the rollouts of the policies that declare spec.rollout: it decides how a
// loaded version starts (at once, or beside the stable version, as the policy's rollout record
// says, if the record is trusted: rolloutrecord.go), judges each step on a goroutine per rollout
// (drive), and moves the next share, completes or rolls back, writing the record before the shares
// move; with sharding, the replicas that do not drive follow the record (shardrollout.go).
//
// It is a type of its own, apart from the policy set, because a rollout is a state machine over
// two versions of one policy, with a record and a clock of its own, while the set keeps which
// version of each policy runs. It holds explicitly what it needs of the set: the set's lock and
// running versions, and the acts of versionRunner. Its methods named ...Locked are called with
// the set's lock held, as the set's own are (the set calls runRolloutLocked, recordStableLocked
// and catchUpLocked from its own ...Locked methods); drive runs on a goroutine of its own per
// rollout, and takes the lock to read the record (recordOf) and to act on a tick (judge, follow).
type rolloutDriver struct {
	ctx   context.Context
	clock clock.WithTicker
	// mapper compiles the stable version a record keeps
	mapper kinds.Mapper
	// records keep the policies' versions and rollouts in the API server (nil: in memory only)
	records *rollout.Store
	// recorder records the rollouts' events on the policies' ConfigMaps (nil: none)
	recorder events.EventRecorder
	// mu is the policy set's lock (policySet.mu), and running its running versions by policy name,
	// which mu guards: the version a rollout completes to takes its stable version's place
	mu      *sync.Mutex
	running map[string]*running
	// set starts and stops the policy's versions (policySet)
	set versionRunner
	// shards returns the slots this replica syncs, the set's (nil: no sharding): only the replica
	// that holds slot 0 drives the rollouts (shardrollout.go)
	shards func() *shards
	// metrics are the set's: a completed rollout loads its version as the policy's
	metrics *policyMetrics
}

// versionRunner is what the rollout driver asks of the policy set (policySet) to run a policy's
// versions: to start a version as the policy's running one, or stop it (with the set's lock
// held), and to run a version's controller beside the running one, on some of the parents.
type versionRunner interface {
	startLocked(p *policy.Compiled, unit source.Unit, old *running, share func(types.UID) bool) *running
	stopLocked(name string, r *running)
	newController(p *policy.Compiled, unit source.Unit, replaces *policy.Compiled, share func(types.UID) bool) (*controller.Controller, *atomic.Pointer[string])
	goRun(p *policy.Compiled, ctrl *controller.Controller, unit source.Unit, predecessor *running, notSynced *atomic.Pointer[string]) *running
}

// rolloutRun is a new version of a policy rolling out beside its running version.
type rolloutRun struct {
	target   *running
	plan     rollout.Plan
	policy   *policy.CompiledRollout
	progress rollout.Progress
	// percent is the share of parents on the target: those whose bucket is below it
	percent atomic.Int32
	// targetStarted is when the target's controller started here (its caches listing from then)
	targetStarted time.Time
}

// moved reports whether a parent is on the target version now.
func (ro *rolloutRun) moved(uid types.UID) bool {
	return policy.RolloutBucket(uid) < int(ro.percent.Load())
}

func (ro *rolloutRun) notMoved(uid types.UID) bool { return !ro.moved(uid) }

// runRolloutLocked starts p when a rollout decides how: a policy rolling out now, or a version
// that declares spec.rollout. It returns false when p starts as before, at once.
func (d *rolloutDriver) runRolloutLocked(p *policy.Compiled, st *unitState, old *running, restart bool) bool {
	v := rollout.Version(p)
	d.records.NoteLoaded(p.Name(), v, inUse(old)...) // p comes from its source: a version a record may name
	if old != nil && old.rollout != nil {
		switch {
		case restart:
			// the CRDs changed: start again, on new informers, where the rollout was
			rec := old.rollout.progress.Record
			d.set.stopLocked(p.Name(), old)
			return d.startFromRecordLocked(p, st, &rec)
		case v == old.rollout.target.version:
			return true // the version rolling out, loaded again
		}
		d.abortRolloutLocked(old) // a newer version, or the stable one again
		if v == old.version {
			old.unit = st.unit.Name
			d.recordStableLocked(old)
			return true
		}
	}
	if old != nil && old.rolledBack != "" && v == old.version {
		d.withdrawRolledBackLocked(old, st) // then as any load of the running version
	}
	if p.Rollout == nil {
		return false
	}
	if old == nil {
		return d.startFromRecordLocked(p, st, nil)
	}
	if v == old.rolledBack {
		if restart { // the CRDs changed: the stable version starts again, on new informers
			rec := rollout.Record{Phase: rollout.RolledBack, Stable: old.version, StableUnit: old.unit, StableSource: string(old.source), Target: v, Message: old.message}
			d.set.stopLocked(p.Name(), old)
			return d.startFromRecordLocked(p, st, &rec)
		}
		return true // failed before: not tried again until the policy changes again
	}
	if v == old.version {
		return false
	}
	if restart {
		// a new version that waited for the CRDs it installs: the stable version starts again, on
		// new informers, and the new one rolls out from it
		rec := rollout.Record{Phase: rollout.Stable, Stable: old.version, StableUnit: old.unit, StableSource: string(old.source)}
		generation := old.generation
		d.set.stopLocked(p.Name(), old)
		if !d.startFromRecordLocked(p, st, &rec) {
			return false
		}
		if r := d.running[p.Name()]; r != nil {
			r.generation = generation // the same version, restarted
		}
		return true
	}
	d.startRolloutLocked(old, newRolloutRun(p, 0, d.clock.Now()), p, st.unit)
	return true
}

// startFromRecordLocked starts a policy that is not running, as its rollout record (rec, else
// the store's) says: the stable version alone, or beside the version it was rolling out to. It
// returns false when p starts at once (no record, or one about p as stable).
func (d *rolloutDriver) startFromRecordLocked(p *policy.Compiled, st *unitState, rec *rollout.Record) bool {
	if rec == nil {
		var err error
		if rec, err = d.records.Get(d.ctx, p.Name()); err != nil {
			klog.FromContext(d.ctx).Error(err, "Cannot read the rollout record; the policy starts at its newest version", "policy", p.Name())
		}
	}
	if rec == nil || rollout.IsVersionOf(rec.Stable, p) || p.Rollout == nil {
		return false
	}
	stable := d.trustedStableLocked(p, st, rec)
	if stable == nil {
		return false
	}
	unit := source.Unit{Name: rec.StableUnit, Data: []byte(rec.StableSource), ConfigMap: st.unit.ConfigMap}
	switch {
	case rec.Phase == rollout.RolledBack && rollout.IsVersionOf(rec.Target, p):
		if r := d.set.startLocked(stable, unit, nil, nil); r != nil {
			r.rolledBack, r.message = rollout.Version(p), rec.Message
		}
	case rec.Phase == rollout.RollingOut && rollout.IsVersionOf(rec.Target, p):
		// the stable version starts without the parents that moved: were it to hold them until
		// the rollout starts, a sync of one would put its children back on the stable version
		ro := newRolloutRun(p, rec.Step, rec.StepStarted)
		if r := d.set.startLocked(stable, unit, nil, ro.notMoved); r != nil {
			d.startRolloutLocked(r, ro, p, st.unit)
		}
	default:
		// the policy changed while no runtime ran: roll the change out from the stable version
		ro := newRolloutRun(p, 0, d.clock.Now())
		if r := d.set.startLocked(stable, unit, nil, ro.notMoved); r != nil {
			d.startRolloutLocked(r, ro, p, st.unit)
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
func (d *rolloutDriver) startRolloutLocked(stable *running, ro *rolloutRun, p *policy.Compiled, unit source.Unit) {
	rec := &ro.progress.Record
	rec.Stable, rec.StableUnit, rec.StableSource = stable.version, stable.unit, string(stable.source)
	step := rec.Step
	d.putRecordLocked(p.Name(), unit.ConfigMap, ro.progress.Record)
	stable.ctrl.SetShare(ro.notMoved) // the stable version lets go of the moved parents first
	ctrl, notSynced := d.set.newController(p, unit, nil, ro.moved)
	if err := ctrl.Watch(); err != nil {
		klog.FromContext(d.ctx).Error(err, "Cannot start the new version of a policy", "policy", p.Name())
		stable.ctrl.SetShare(nil)
		return
	}
	ro.target = d.set.goRun(p, ctrl, unit, nil, notSynced)
	ro.targetStarted = d.clock.Now()
	stable.rollout = ro
	klog.FromContext(d.ctx).Info("Policy rolling out", "policy", p.Name(), "version", policystatus.ShortVersion(ro.target.version), "step", step+1, "steps", len(ro.plan.Steps), "percent", ro.percent.Load())
	d.rolloutEvent(unit, "Normal", "PolicyRollingOut", fmt.Sprintf("policy %q: version %s rolling out, step %d of %d: %d%% of parents",
		p.Name(), policystatus.ShortVersion(ro.target.version), step+1, len(ro.plan.Steps), ro.percent.Load()))
	go d.drive(p.Name(), ro)
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
func (d *rolloutDriver) drive(name string, ro *rolloutRun) {
	ctx := klog.NewContext(d.ctx, klog.FromContext(d.ctx).WithValues("policy", name))
	t := d.clock.NewTicker(rolloutTick)
	defer t.Stop()
	shards := d.shards()
	if shards != nil {
		defer shards.setRollout(name, nil)
	}
	for {
		select {
		case <-ro.target.done:
			if shards == nil || shards.drives() { // a follower follows the record
				d.endStoppedTarget(ctx, name, ro)
			}
			return
		case <-t.C():
		}
		if !ro.target.isSynced() {
			if (shards == nil || shards.drives()) && !d.judgeNotSynced(ctx, name, ro) {
				return
			}
			continue
		}
		h := d.healthOf(ctx, ro)
		if shards != nil {
			rec := d.recordOf(ro)
			report := reportOf(rec, h)
			shards.setRollout(name, &report)
			if !shards.drives() {
				if !d.follow(ctx, name, ro) {
					return
				}
				continue
			}
			h = shards.withOthers(name, rec, h)
		}
		if !d.judge(ctx, name, ro, h) {
			return
		}
	}
}

// judgeNotSynced fails a rollout whose new version has not synced its caches by the step's
// health deadline (a child resource its identity may not list, say): the parents moved to it are
// synced by no version meanwhile. It returns false once the rollout has ended.
func (d *rolloutDriver) judgeNotSynced(ctx context.Context, name string, ro *rolloutRun) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	stable := d.running[name]
	if stable == nil || stable.rollout != ro {
		return false // stopped or replaced meanwhile
	}
	// from the step's start, or from the target's, if later: a runtime restarted mid-step gives
	// its new target the whole deadline to list
	since := ro.progress.Record.StepStarted
	if ro.targetStarted.After(since) {
		since = ro.targetStarted
	}
	if d.clock.Now().Before(since.Add(ro.plan.HealthDeadline)) {
		return true
	}
	why := "the new version's caches did not sync by the health deadline"
	if msg := ro.target.notSynced.Load(); msg != nil {
		why += ": " + *msg
	}
	d.failLocked(ctx, name, stable, ro, why)
	return false
}

// endStoppedTarget rolls back a rollout whose new version's controller stopped on its own (it
// could not start: its identity cannot be checked, say), so that the parents moved to it go
// back to the stable version; one stopped on purpose (completed, rolled back, replaced, the
// policy removed, the runtime stopping) is left alone.
func (d *rolloutDriver) endStoppedTarget(ctx context.Context, name string, ro *rolloutRun) {
	if d.ctx.Err() != nil {
		return
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if stable := d.running[name]; stable != nil && stable.rollout == ro {
		d.failLocked(ctx, name, stable, ro, "the new version's controller stopped")
	}
}

// recordOf returns a rollout's record as this replica has it.
func (d *rolloutDriver) recordOf(ro *rolloutRun) rollout.Record {
	d.mu.Lock()
	defer d.mu.Unlock()
	return ro.progress.Record
}

// healthOf judges the parents moved to the target: healthy once the target's controller has
// synced them and its health rule holds.
func (d *rolloutDriver) healthOf(ctx context.Context, ro *rolloutRun) rollout.Health {
	var h rollout.Health
	for _, m := range ro.target.ctrl.Parents().Held() {
		h.Moved++
		key := klog.KObj(m).String()
		why := ""
		if !ro.target.ctrl.Parents().Synced(m) {
			why = "not synced by the new version yet"
		} else if u, err := compact.Unstructured(m); err != nil {
			why = err.Error()
		} else if ok, reason, err := ro.policy.Healthy(ctx, &unstructured.Unstructured{Object: ro.target.policy.ParentForCEL(u.Object)}); err != nil {
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
func (d *rolloutDriver) judge(ctx context.Context, name string, ro *rolloutRun, h rollout.Health) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	stable := d.running[name]
	if stable == nil || stable.rollout != ro {
		return false // stopped or replaced meanwhile
	}
	switch rollout.Decide(&ro.progress, ro.plan, h, d.clock.Now()) {
	case rollout.Advance:
		d.advanceLocked(ctx, name, stable, ro)
	case rollout.Complete:
		d.completeLocked(ctx, name, stable, ro)
		return false
	case rollout.Fail:
		d.failLocked(ctx, name, stable, ro, rollout.Describe(h, ro.plan.Budget(h.Moved)))
		return false
	case rollout.Wait:
	}
	return true
}

// advanceLocked moves the next step's parents to the target: recorded first, then the stable
// version lets go of them, then the target takes them.
func (d *rolloutDriver) advanceLocked(ctx context.Context, name string, stable *running, ro *rolloutRun) {
	next := ro.progress.Record
	next.Step++
	next.StepStarted = d.clock.Now()
	d.putRecordLocked(name, ro.target.configMap, next)
	d.moveToStepLocked(ctx, stable, ro, next.Step, next.StepStarted)
	d.rolloutEventOf(stable, "Normal", "PolicyRollingOut", fmt.Sprintf("policy %q: version %s, step %d of %d: %d%% of parents",
		name, policystatus.ShortVersion(next.Target), next.Step+1, len(ro.plan.Steps), ro.percent.Load()))
}

// moveToStepLocked moves the parents of a step (started then) to the target: the stable version
// lets go of them first.
func (d *rolloutDriver) moveToStepLocked(ctx context.Context, stable *running, ro *rolloutRun, step int, started time.Time) {
	rec := &ro.progress.Record
	rec.Step, rec.StepStarted = step, started
	ro.progress.HealthySince = time.Time{}
	ro.percent.Store(int32(ro.plan.Steps[step].Percent))
	stable.ctrl.SetShare(ro.notMoved)
	ro.target.ctrl.SetShare(ro.moved)
	klog.FromContext(ctx).Info("Policy rollout step", "version", policystatus.ShortVersion(rec.Target), "step", step+1, "steps", len(ro.plan.Steps), "percent", ro.percent.Load())
}

// completeLocked hands every parent to the target, which becomes the running version.
func (d *rolloutDriver) completeLocked(ctx context.Context, name string, stable *running, ro *rolloutRun) {
	target := ro.target
	target.generation = stable.generation + 1
	stable.rollout = nil
	target.ctrl.TakeAll(ctx, stable.policy)
	stable.stop()
	d.running[name] = target
	d.recordStableLocked(target)
	d.metrics.loaded(name, target.unit, target.generation)
	klog.FromContext(ctx).Info("Policy rolled out", "version", policystatus.ShortVersion(target.version), "generation", target.generation)
	d.rolloutEventOf(target, "Normal", "PolicyRolledOut", fmt.Sprintf("policy %q: version %s serves every parent (generation %d)", name, policystatus.ShortVersion(target.version), target.generation))
}

// failLocked moves every parent back to the stable version, and records the target as failed.
func (d *rolloutDriver) failLocked(ctx context.Context, name string, stable *running, ro *rolloutRun, why string) {
	rec := ro.progress.Record
	msg := fmt.Sprintf("policy %q: version %s rolled back at step %d of %d: %s", name, policystatus.ShortVersion(rec.Target), rec.Step+1, len(ro.plan.Steps), why)
	d.putRecordLocked(name, ro.target.configMap, rollout.Record{
		Phase: rollout.RolledBack, Stable: rec.Stable, StableUnit: rec.StableUnit, StableSource: rec.StableSource,
		Target: rec.Target, Message: msg,
	})
	d.rollBackLocked(ctx, name, stable, ro, msg)
}

// rollBackLocked moves every parent back to the stable version, as the record says (msg).
func (d *rolloutDriver) rollBackLocked(ctx context.Context, name string, stable *running, ro *rolloutRun, msg string) {
	rec := ro.progress.Record
	stable.rollout, stable.rolledBack, stable.message = nil, rec.Target, msg
	ro.target.stop()
	stable.ctrl.TakeAll(d.ctx, ro.target.policy)
	klog.FromContext(ctx).Error(nil, "Policy rollout failed; rolled back", "policy", name, "version", policystatus.ShortVersion(rec.Target), "message", msg)
	d.rolloutEventOf(ro.target, "Warning", "PolicyRolloutFailed", msg)
}

// abortRolloutLocked ends a rollout that a newer version replaces: every parent goes back to the
// stable version, which the caller replaces or keeps.
func (d *rolloutDriver) abortRolloutLocked(stable *running) {
	ro := stable.rollout
	stable.rollout = nil
	ro.target.stop()
	stable.ctrl.TakeAll(d.ctx, ro.target.policy)
	klog.FromContext(d.ctx).Info("Policy rollout replaced by a newer version", "policy", stable.policy.Name(), "version", policystatus.ShortVersion(ro.target.version))
}

// withdrawRolledBackLocked forgets the version that failed to roll out once the policy's source
// holds the stable version again (the user reverted it): the policy is Running, not RolledBack, its
// record says Stable, and the failed version, applied again, rolls out anew.
func (d *rolloutDriver) withdrawRolledBackLocked(stable *running, st *unitState) {
	klog.FromContext(d.ctx).Info("Policy reverted to its stable version; the version rolled back may roll out again", "policy", stable.policy.Name(), "version", policystatus.ShortVersion(stable.rolledBack))
	stable.rolledBack, stable.message = "", ""
	stable.unit = st.unit.Name
	d.recordStableLocked(stable)
}

// recordStableLocked records r as its policy's stable version.
func (d *rolloutDriver) recordStableLocked(r *running) {
	d.records.NoteLoaded(r.policy.Name(), r.version) // every caller's r comes from its source
	d.putRecordLocked(r.policy.Name(), r.configMap, rollout.Record{Phase: rollout.Stable, Stable: r.version, StableUnit: r.unit, StableSource: string(r.source)})
}

// recordStoppedLocked records that r's policy no longer runs (rollout.Record.Stopped).
// The record is kept as it was but for that (a rollout rolled back stays rolled back); a policy
// with no record gets one of its running version.
func (d *rolloutDriver) recordStoppedLocked(r *running) {
	name := r.policy.Name()
	rec, err := d.records.Get(d.ctx, name)
	if err != nil {
		klog.FromContext(d.ctx).Error(err, "Cannot read the rollout record; it does not say the policy stopped", "policy", name)
		return
	}
	if rec == nil {
		rec = &rollout.Record{Phase: rollout.Stable, Stable: r.version, StableUnit: r.unit, StableSource: string(r.source)}
	}
	rec.Stopped = true
	d.putRecordLocked(name, r.configMap, *rec)
}

// recordRunsLocked clears the Stopped of the record of r's policy, which runs again: one whose
// record its start does not write anew (it starts rolled back, say) would rank as stopped.
func (d *rolloutDriver) recordRunsLocked(r *running) {
	name := r.policy.Name()
	rec, err := d.records.Get(d.ctx, name)
	if err != nil || rec == nil || !rec.Stopped {
		return // a record that cannot be read is written by the next change of the policy's state
	}
	rec.Stopped = false
	d.putRecordLocked(name, r.configMap, *rec)
}

// putRecordLocked writes a policy's record, once the versions it names are listed as loaded on
// the ConfigMap the policy loads from (ref), which a restarted runtime checks the record against
// (rolloutrecord.go); with sharding, only the replica that drives the rollouts does, as a write
// for slot 0 (the write fence lets it through only while it holds it).
func (d *rolloutDriver) putRecordLocked(name string, ref *corev1.ObjectReference, rec rollout.Record) {
	ctx := d.ctx
	if shards := d.shards(); shards != nil {
		if !shards.drives() {
			return
		}
		ctx = hashslot.WithSlot(ctx, 0)
	}
	if err := d.records.Anchor(ctx, ref, name, rec.Stable, rec.Target); err != nil {
		klog.FromContext(d.ctx).Error(err, "Cannot list the loaded versions on the policy's ConfigMap; a restart will not trust the rollout record", "policy", name)
	}
	if err := d.records.Put(ctx, name, rec); err != nil {
		klog.FromContext(d.ctx).Error(err, "Cannot write the rollout record; a restart may not resume where the policy is", "policy", name)
	}
}

// rolloutEventOf records an event of a rollout on the ConfigMap a running version came from: with
// sharding, only the replica that drives the rollouts does (one event, not one per replica).
func (d *rolloutDriver) rolloutEventOf(r *running, typ, reason, note string) {
	d.rolloutEvent(source.Unit{Name: r.unit, ConfigMap: r.configMap}, typ, reason, note)
}

func (d *rolloutDriver) rolloutEvent(unit source.Unit, typ, reason, note string) {
	if d.shards().drives() {
		unitEvent(d.recorder, unit, typ, reason, note)
	}
}
