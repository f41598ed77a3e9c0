package operator

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	"k8s.io/klog/v2"

	"metacel.dev/metacel/runtime/controller"
	"metacel.dev/metacel/runtime/memo"
	"metacel.dev/metacel/runtime/policy"
	"metacel.dev/metacel/runtime/policystatus"
	"metacel.dev/metacel/runtime/rollout"
	"metacel.dev/metacel/runtime/source"
)

// controllers are the policies' running versions, by policy name, and what starts and stops them:
// a version's controller is made, watches and runs, handed over from the version it replaces
// (which syncs until the new one has synced its caches); a removed policy's controller lets its
// Recreates under way complete before it stops; what runs is asked of it (ready, runs, Running,
// the counts). Which version of which policy runs is decided elsewhere: by the policy set, and by
// the rollout driver, which runs a second version beside one (versionRunner). mu guards running
// and removing, which goroutines of their own change too (a rollout's driver, a removed policy's
// last Recreates); the policy set holds it while it decides.
type controllers struct {
	ctx      context.Context
	deps     controller.Deps
	workers  int
	recorder events.EventRecorder
	metrics  *policyMetrics
	// memos keep what the controllers knew of their converged parents across restarts (nil: off)
	memos *memo.Store
	// shards returns the slots this replica syncs, the policy set's (nil: no sharding)
	shards func() *shards
	// onStart, when not nil, is told of each version started as its policy's running one, under mu
	// (the rollout driver: a policy that runs again is not recorded as stopped)
	onStart func(*running)

	mu      sync.Mutex
	running map[string]*running // by policy name
	// removing are the controllers of removed policies that let their Recreates under way
	// complete before they stop (removeLocked), by policy name
	removing map[string]*running
}

func newControllers(ctx context.Context, deps controller.Deps, workers int, recorder events.EventRecorder, metrics *policyMetrics, shards func() *shards) *controllers {
	return &controllers{ctx: ctx, deps: deps, workers: workers, recorder: recorder, metrics: metrics, shards: shards,
		running: map[string]*running{}, removing: map[string]*running{}}
}

// unitRunning is the unit the policy of that name runs from; "" when it does not run.
func (c *controllers) unitRunning(name string) string {
	c.mu.Lock()
	defer c.mu.Unlock()
	if r := c.running[name]; r != nil {
		return r.unit
	}
	return ""
}

// startLocked starts the controller of a version of a policy, on the parents of share (nil: all),
// replacing old (nil: none); nil when it cannot start.
func (c *controllers) startLocked(p *policy.Compiled, unit source.Unit, old *running, share func(types.UID) bool) *running {
	var replaces *policy.Compiled
	if old != nil {
		replaces = old.policy
	}
	ctrl, notSynced := c.newController(p, unit, replaces, share)
	if err := ctrl.Watch(); err != nil {
		klog.FromContext(c.ctx).Error(err, "Cannot start policy", "policy", p.Name())
		return nil
	}
	var predecessor *running
	if old != nil {
		predecessor = old.handOver()
	}
	r := c.goRun(p, ctrl, unit, predecessor, notSynced)
	if old != nil {
		r.generation = old.generation + 1
	}
	c.running[p.Name()] = r
	if c.onStart != nil {
		c.onStart(r)
	}
	c.metrics.loaded(p.Name(), unit.Name, r.generation)
	verb := "loaded"
	if r.generation > 1 {
		verb = "reloaded"
	}
	klog.FromContext(c.ctx).Info("Policy "+verb, "policy", p.Name(), "source", unit.Name, "generation", r.generation)
	unitEvent(c.recorder, unit, "Normal", "PolicyLoaded", fmt.Sprintf("policy %q %s (generation %d)", p.Name(), verb, r.generation))
	return r
}

// newController prepares the controller of p from unit, replacing replaces (nil: none), on the
// parents of share (nil: all), sharded as the set is: its reports of caches not synced become
// events on unit's ConfigMap, the last one kept in notSynced.
func (c *controllers) newController(p *policy.Compiled, unit source.Unit, replaces *policy.Compiled, share func(types.UID) bool) (ctrl *controller.Controller, notSynced *atomic.Pointer[string]) {
	notSynced = new(atomic.Pointer[string])
	opts := controller.Options{Replaces: replaces, Share: share, Version: policystatus.ShortVersion(rollout.Version(p)),
		OnNotSynced: func(msg string) {
			notSynced.Store(&msg)
			unitEvent(c.recorder, unit, "Warning", "PolicyNotSynced", msg)
		}}
	if c.shards() != nil {
		opts.Sharded, opts.ServerSideShards = true, c.shards().serverSide
	}
	return controller.New(p, c.deps, opts), notSynced
}

// goRun runs a controller that watches already, until its running is stopped; notSynced holds
// its last report of caches not synced. predecessor (nil: none) is the controller it replaces,
// stopped once this one has synced. It is set before the controller starts: over shared
// informers that have synced already, the controller may sync at once, and a predecessor it does
// not know yet would never be stopped, and go on syncing beside it.
func (c *controllers) goRun(p *policy.Compiled, ctrl *controller.Controller, unit source.Unit, predecessor *running, notSynced *atomic.Pointer[string]) *running {
	ctx, cancel := context.WithCancel(c.ctx)
	r := &running{
		policy: p, ctrl: ctrl, unit: unit.Name, source: unit.Data, version: rollout.Version(p), configMap: unit.ConfigMap, generation: 1,
		ctx: ctx, cancel: cancel, done: make(chan struct{}), synced: make(chan struct{}), notSynced: notSynced,
		predecessor: predecessor,
	}
	go func() {
		defer close(r.done)
		started := func() {
			close(r.synced)
			// the old version syncs until the new one can (no overlap), and is gone before the new
			// one deletes the children of the resources it dropped (the old one would recreate them)
			r.stopPredecessor()
		}
		if c.shards() != nil {
			ctrl.FollowSlots(ctx, c.shards().held) // the slot informers first: Run waits for them
		}
		recallMemo(ctx, c.memos, ctrl) // while the informers list
		if err := ctrl.Run(ctx, c.workers, started); err != nil {
			klog.FromContext(ctx).Error(err, "Policy controller failed", "policy", p.Name())
		}
	}()
	return r
}

// recreateGrace bounds how long a removed policy's controller lets its Recreates under way
// complete: a Pod's default termination grace period, and a little.
const recreateGrace = 40 * time.Second

// removeLocked stops the controller of a policy that was removed, once the Recreates it has
// under way have completed (controller.FinishRecreates): a parent whose old child was deleted
// gets its new one, not none. It waits off the lock; a policy loaded again meanwhile takes the
// controller over as its predecessor (startLocked).
func (c *controllers) removeLocked(name string, r *running) {
	delete(c.running, name)
	c.metrics.removed(name)
	if r.rollout != nil || !r.isSynced() {
		c.stopRemoved(name, r)
		return
	}
	c.removing[name] = r
	go func() {
		r.ctrl.FinishRecreates(r.ctx, recreateGrace) // cut short when a successor stops it
		c.mu.Lock()
		defer c.mu.Unlock()
		if c.removing[name] != r {
			return // loaded again: its successor stops it
		}
		delete(c.removing, name)
		c.stopRemoved(name, r)
	}()
}

func (c *controllers) stopRemoved(name string, r *running) {
	r.stop()
	klog.FromContext(c.ctx).Info("Policy stopped; its children stay", "policy", name)
}

// takeRemoving returns the controller of a removed policy of that name that still finishes its
// Recreates, to be replaced; nil when none.
func (c *controllers) takeRemoving(name string) *running {
	r := c.removing[name]
	delete(c.removing, name)
	return r
}

func (c *controllers) stopLocked(name string, r *running) {
	r.stop()
	delete(c.running, name)
	c.metrics.removed(name)
	klog.FromContext(c.ctx).Info("Policy stopped; its children stay", "policy", name)
}

// stopAll stops every controller, e.g. at shutdown: a removed policy's too, which a restart
// does not run again (its Recreates under way stay as they are).
func (c *controllers) stopAll() {
	c.mu.Lock()
	defer c.mu.Unlock()
	for name, r := range c.running {
		c.stopLocked(name, r)
		saveMemo(c.ctx, c.memos, r.ctrl)
	}
	for name := range c.removing {
		c.takeRemoving(name).stop()
	}
}

// ready reports whether every running controller has synced its caches.
func (c *controllers) ready() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, r := range c.running {
		select {
		case <-r.synced:
		default:
			return false
		}
	}
	return true
}

// runs reports whether a policy of that name runs (for the CRD installer).
func (c *controllers) runs(name string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	_, ok := c.running[name]
	return ok
}

// Running returns the names of the running policies and their generations.
func (c *controllers) Running() map[string]int {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := map[string]int{}
	for name, r := range c.running {
		out[name] = r.generation
	}
	return out
}

// runsFrom reports whether the policy of that name runs from the unit of that name.
func (c *controllers) runsFrom(name, unit string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	r := c.running[name]
	return r != nil && r.unit == unit
}

// localCounts counts, by policy, the parents its controllers sync in this process (both versions
// during a rollout), once per tick: counting reads every cached parent.
func (c *controllers) localCounts() map[string]controller.Counts {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make(map[string]controller.Counts, len(c.running))
	for name, r := range c.running {
		c := r.ctrl.Parents().Count()
		if r.rollout != nil {
			c = add(c, r.rollout.target.ctrl.Parents().Count())
		}
		out[name] = c
	}
	return out
}
