package operator

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/tools/events"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"metacel.dev/metacel/runtime/controller"
	"metacel.dev/metacel/runtime/kinds"
	"metacel.dev/metacel/runtime/memo"
	"metacel.dev/metacel/runtime/policy"
	"metacel.dev/metacel/runtime/policystatus"
	"metacel.dev/metacel/runtime/rollout"
	"metacel.dev/metacel/runtime/source"
)

// policySet keeps the running controllers in line with the policies the sources hold: it loads
// the sources' units, picks the policies to run (one per name and parent resource), and starts,
// swaps, hands over and stops their controllers; it reports their state. What is not the set is
// apart: the rollout driver (rolloutDriver, rollout.go) moves a policy that declares spec.rollout
// to a new version step by step, and the CRD installer (crdInstaller, crdinstall.go) installs the
// parents' CRDs; the running controllers, started and stopped as the set decides, are apart too
// (controllers, controllers.go). It is driven by one goroutine (update and retry are never
// concurrent); only the controllers' ready and Running are called from others, and setSlots from
// the shard coordinator's.
type policySet struct {
	ctx      context.Context
	deps     controller.Deps
	mapper   kinds.Mapper
	reset    func() // forgets what the mapper learnt, after a CRD change
	recorder events.EventRecorder
	metrics  *policyMetrics
	// rollouts drives the rollouts of the policies that declare spec.rollout (rollout.go)
	rollouts *rolloutDriver
	clock    clock.WithTicker
	// status reports each policy's state on its ConfigMap (nil: off); published are the
	// ConfigMap and policy names reported last
	status    *policystatus.Reporter
	published map[[2]string]bool
	// shards, when not nil, is the slots of the parents this replica syncs (sharding.go)
	shards *shards
	// identities, when not nil, refuse the policies that may not act as the runtime (identity.go)
	identities *identities
	// installer, when not nil, installs the parents' CRDs of the policies that ask for it
	// (crdinstall.go)
	installer *crdInstaller

	snapshots map[string][]source.Unit // by source
	units     map[string]*unitState    // by unit name

	// ctrls are the running controllers; their lock is held while the set decides
	ctrls *controllers
}

// unitState is what one unit last gave.
type unitState struct {
	unit source.Unit
	hash string
	good []*policy.Compiled // the last version that loaded, kept when a new one fails
	// goodHash is the hash of the unit's version that good holds
	goodHash string
	// waiting is true when a policy of the unit waits for a resource the cluster does not serve
	waiting bool
	// failed is true when the unit's latest version did not load
	failed bool
	// crds names the CRDs (resource.group) that the unit's latest version refers to: a change
	// to one of them may make a failed version load
	crds map[string]bool
	// reported is the last load problem reported (reason and message): the same problem found
	// again (a retry, a rescan) is not reported again
	reported string
	// conflicts are the conflicts reported for the unit's policies, by policy name, kept while
	// they last
	conflicts map[string]string
	// recordRejected says why a policy's rollout record was not used (rolloutrecord.go), shown
	// in its status until a new version of the unit loads
	recordRejected string
	// installRetryAt is when to load the unit again after its CRD could not be installed
	// (zero: not to), and installFailures how many attempts in a row failed (crdinstall.go)
	installRetryAt  time.Time
	installFailures int
}

// running is a policy whose controller runs.
type running struct {
	policy *policy.Compiled
	ctrl   *controller.Controller
	unit   string
	// source is the text of the unit the version came from, and version its hash
	// (rollout.Version): what a rollout record keeps of a stable version
	source     []byte
	version    string
	configMap  *corev1.ObjectReference
	generation int
	// rollout, when not nil, is the new version rolling out beside this one (rollout.go);
	// rolledBack is the version that failed to roll out, not tried again
	rollout    *rolloutRun
	rolledBack string
	message    string
	// notSynced is why the caches have not synced yet, once the controller has said so
	notSynced *atomic.Pointer[string]
	// ctx is done once the controller is stopped (cancel)
	ctx    context.Context
	cancel context.CancelFunc
	done   chan struct{}
	synced chan struct{}
	// predecessor is the controller this one replaces: it keeps syncing until this one's caches
	// have synced, and is stopped before this one's workers start
	mu          sync.Mutex
	predecessor *running
}

// stop stops the controller and its predecessor, and waits for them; stopping twice is harmless.
func (r *running) stop() {
	if r.rollout != nil {
		r.rollout.target.stop()
	}
	r.cancel()
	<-r.done
	r.stopPredecessor()
}

// stopPredecessor stops the controller this one replaces, if it still runs.
func (r *running) stopPredecessor() {
	if p := r.takePredecessor(); p != nil {
		p.stop()
	}
}

func (r *running) takePredecessor() *running {
	r.mu.Lock()
	defer r.mu.Unlock()
	p := r.predecessor
	r.predecessor = nil
	return p
}

// handOver returns the controller that keeps syncing until a replacement of r has synced its
// caches: r itself, or, when r never synced (it was replaced again at once), the one it was
// waiting to replace; r is then stopped now.
func (r *running) handOver() *running {
	if r.isSynced() {
		return r
	}
	r.cancel()
	<-r.done
	return r.takePredecessor() // nil if r synced meanwhile, and stopped it
}

// isSynced reports whether the controller's caches have synced.
func (r *running) isSynced() bool {
	select {
	case <-r.synced:
		return true
	default:
		return false
	}
}

func newPolicySet(ctx context.Context, deps controller.Deps, reset func(), workers int, recorder events.EventRecorder, reg prometheus.Registerer) *policySet {
	s := &policySet{
		ctx: ctx, deps: deps, mapper: deps.Mapper, reset: reset, recorder: recorder,
		metrics:   newPolicyMetrics(reg),
		clock:     clock.RealClock{},
		snapshots: map[string][]source.Unit{},
		units:     map[string]*unitState{},
	}
	shards := func() *shards { return s.shards }
	s.ctrls = newControllers(ctx, deps, workers, recorder, s.metrics, shards)
	s.rollouts = &rolloutDriver{
		ctx: ctx, clock: s.clock, mapper: s.mapper, recorder: recorder, mu: &s.ctrls.mu, running: s.ctrls.running, set: s.ctrls,
		shards: shards, metrics: s.metrics,
	}
	s.ctrls.onStart = s.rollouts.recordRunsLocked
	return s
}

// update takes a source's new snapshot and reconciles, once each of the sources (how many there
// are) has given its first: which policy runs and which installs a CRD that several install are
// decided from all the policies there are, never from those of the source that listed first.
func (s *policySet) update(snap source.Snapshot, sources int) {
	s.snapshots[snap.Source] = snap.Units
	if len(s.snapshots) < sources {
		return
	}
	s.reconcile(nil, nil)
}

// reconcile compiles what changed (and the units retry picks), then starts, swaps and stops
// controllers; restart, when not nil, picks running policies to restart even when unchanged.
func (s *policySet) reconcile(retry func(*unitState) bool, restart func(*policy.Compiled) bool) {
	defer s.warmInformers()() // until the controllers hold their own
	edited := s.loadUnits(retry)
	ranks := s.claimRanks() // off the lock: it reads the API server
	s.ctrls.mu.Lock()       // resolveConflicts reads the running controllers, which a rollout's end swaps
	defer s.ctrls.mu.Unlock()
	desired := s.resolveConflicts(ranks)
	for name, r := range s.ctrls.running {
		if _, ok := desired[name]; !ok {
			s.removeLocked(name, r)
		}
	}
	for _, d := range sortedDesired(desired) {
		kept := s.runLocked(d.policy, d.unit, restart != nil && restart(d.policy))
		if kept && edited[d.unit] {
			s.metrics.sameVersion(d.policy.Name()) // its unit's text changed, not the policy
		}
	}
}

// warmInformers starts the informers of the parents of new or changed units, as their controllers
// will watch them, so that they list while the units compile; it returns what lets go of them.
// Resources the mapper does not know are left alone (their policies will wait or fail), and so is
// everything with sharding (informers per slot). Child resources are not warmed: what their
// caches keep is known once a unit has compiled (informers.Pool.Warm).
func (s *policySet) warmInformers() (release func()) {
	if s.shards != nil || s.deps.Pool == nil {
		return func() {}
	}
	known := func(r namedResource) (schema.GroupVersionResource, bool) {
		gv, err := schema.ParseGroupVersion(r.APIVersion)
		if err != nil || r.Resource == "" {
			return schema.GroupVersionResource{}, false
		}
		gvr := gv.WithResource(r.Resource)
		_, ok := s.mapper.ForResource(gvr)
		return gvr, ok
	}
	var releases []func()
	for _, units := range s.snapshots {
		for _, u := range units {
			if st := s.units[u.Name]; st != nil && st.hash == u.Hash() {
				continue
			}
			eachPolicyNamed(u.Data, true, func(doc namedResources) {
				if gvr, ok := known(doc.Spec.ParentResource.namedResource); ok && doc.Spec.ParentResource.LabelSelector == nil {
					releases = append(releases, s.deps.Pool.Warm(gvr))
				}
			})
		}
	}
	return func() {
		for _, r := range releases {
			r()
		}
	}
}

// loadUnits compiles every new or changed unit, and those retry picks, off to the side; a unit
// that fails keeps its last good policies, and the failure is reported. Which policy installs a
// CRD that several install is settled among all the units the sources hold, before any loads.
// It returns the units whose text changed.
func (s *policySet) loadUnits(retry func(*unitState) bool) (edited map[*unitState]bool) {
	present := map[string]bool{}
	edited = map[*unitState]bool{}
	var changed []*unitState
	for _, units := range s.snapshots {
		for _, u := range units {
			present[u.Name] = true
			st := s.units[u.Name]
			if st == nil {
				st = &unitState{}
				s.units[u.Name] = st
			}
			if st.hash == u.Hash() && (retry == nil || !retry(st)) {
				continue
			}
			edited[st] = st.hash != u.Hash()
			st.unit, st.hash = u, u.Hash()
			changed = append(changed, st)
		}
	}
	for name := range s.units {
		if !present[name] {
			delete(s.units, name)
		}
	}
	claims := &crdClaims{}
	for _, st := range byUnitName(s.units) {
		claims.units = append(claims.units, st.unit)
	}
	for _, st := range changed {
		s.load(st, claims)
	}
	return edited
}

// byUnitName sorts units by name: an order every replica, and a restarted runtime, sees alike,
// whatever order the sources listed them in.
func byUnitName(units map[string]*unitState) []*unitState {
	out := make([]*unitState, 0, len(units))
	for _, st := range units {
		out = append(out, st)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].unit.Name < out[j].unit.Name })
	return out
}

func (s *policySet) load(st *unitState, claims *crdClaims) {
	if err := s.checkCompilesWithItsCRDs(st.unit); err != nil {
		st.failed, st.crds = true, crdsNamed(st.unit)
		s.reportFailure(st, err) // the CRDs stay as the last good version installed them
		return
	}
	if s.installParentCRDsOf(st, claims) {
		return
	}
	compiled, err := s.compile(st.unit)
	st.failed, st.crds = err != nil, crdsNamed(st.unit)
	if err != nil {
		s.reportFailure(st, err)
		return
	}
	st.waiting = false
	var waits []string
	for _, p := range compiled {
		if missing := missingResources(p); len(missing) > 0 {
			st.waiting = true
			waits = append(waits, fmt.Sprintf("policy %q waits for resources the cluster does not serve yet (%s): %s", p.Name(), howToServe(p), strings.Join(missing, ", ")))
		}
	}
	if st.waiting {
		s.report(st, "PolicyWaiting", strings.Join(waits, "; "), func(logger klog.Logger, msg string) {
			logger.Info("Policy waits for resources the cluster does not serve yet", "reason", msg)
		})
	} else {
		st.reported = "" // loaded: a problem found again later is news
	}
	if st.waiting && st.good != nil && st.goodHash != st.hash {
		return // a new version waits: the last good one runs until the cluster serves its resources
	}
	// the same version waits when the cluster stopped serving a resource (its CRD was deleted):
	// it stops, and starts again when the resource is back
	if st.goodHash != st.hash {
		st.recordRejected = "" // a new version: its record is judged anew when it starts
	}
	st.good, st.goodHash = compiled, st.hash
}

// installParentCRDsOf installs the CRDs that the unit's policies install; it reports true when
// the unit is not to compile now: a CRD could not be installed (the unit failed, and is loaded
// again later), or the unit's new version waits for the CRD just written to be served as written
// while its last good version keeps running. A unit whose running version's CRD was written
// anew (it was deleted) compiles, and waits as any policy whose resources are not served. Of the
// policies that install one CRD, claims says which may.
func (s *policySet) installParentCRDsOf(st *unitState, claims *crdClaims) bool {
	res := s.installer.installParentCRDs(s.ctx, st.unit, claims)
	if res.err != nil {
		st.failed, st.crds = true, crdsNamed(st.unit)
		st.installFailures++
		st.installRetryAt = s.clock.Now().Add(installRetryAfter(st.installFailures))
		s.reportFailure(st, res.err)
		return true
	}
	st.installFailures, st.installRetryAt = 0, time.Time{}
	if len(res.written) == 0 || st.good != nil && st.goodHash == st.hash {
		return false
	}
	st.failed, st.waiting, st.crds = false, true, crdsNamed(st.unit)
	msg := fmt.Sprintf("installed the CRD %s from parentSchema; the policy starts once the API server serves it", strings.Join(res.written, ", "))
	s.report(st, "PolicyWaiting", msg, func(logger klog.Logger, msg string) {
		logger.Info("Policy waits for the CRD it installed", "crds", res.written)
	})
	return true
}

// checkCompilesWithItsCRDs compiles a unit whose policies install their parents' CRDs against
// those CRDs as it would install them, before any is written: a version that does not load (a CEL
// error, say) installs nothing, so the last good version never runs against a CRD of a version
// that never loaded. The CRDs the cluster serves now are not asked: their schema may be the one
// the unit changes. Only compile errors count; whether the cluster serves the other resources is
// the load's to say.
func (s *policySet) checkCompilesWithItsCRDs(u source.Unit) error {
	crds := parentCRDsOf(u)
	if s.installer == nil || len(crds) == 0 {
		return nil
	}
	declared := asDeclared{kinds.NewCatalog()}
	for _, p := range crds {
		declared.AddCRD(p.crd)
	}
	_, err := policy.Load(u.Name, u.Data, kinds.Chain{declared, s.mapper})
	return err
}

// asDeclared is a Mapper that knows only the CRDs added to it (as a unit declares them), and
// leaves every other resource to the mappers after it in a kinds.Chain.
type asDeclared struct{ *kinds.Catalog }

func (m asDeclared) ForResource(gvr schema.GroupVersionResource) (kinds.Info, bool) {
	if !m.DefinedByCRD(gvr.GroupResource()) {
		return kinds.Info{}, false
	}
	return m.Catalog.ForResource(gvr)
}

func (m asDeclared) ForKind(gvk schema.GroupVersionKind) (kinds.Info, bool) {
	info, ok := m.Catalog.ForKind(gvk)
	if !ok || !m.DefinedByCRD(info.GVR.GroupResource()) {
		return kinds.Info{}, false
	}
	return info, true
}

func (m asDeclared) Versions(gr schema.GroupResource) []string {
	if !m.DefinedByCRD(gr) {
		return nil
	}
	return m.Catalog.Versions(gr)
}

// compile loads a unit's policies with what the cluster says of their resources.
func (s *policySet) compile(u source.Unit) ([]*policy.Compiled, error) {
	if u.Problem != "" {
		return nil, errors.New(u.Problem)
	}
	compiled, err := policy.Load(u.Name, u.Data, s.mapper)
	if err == nil && anyMissing(compiled) {
		// what discovery said may predate a CRD created since: ask again before waiting
		s.reset()
		compiled, err = policy.Load(u.Name, u.Data, s.mapper)
	}
	if err != nil || s.identities == nil {
		return compiled, err
	}
	var errs []error
	for _, p := range compiled {
		errs = append(errs, s.identities.check(p))
	}
	return compiled, errors.Join(errs...)
}

// reportFailure reports a unit that did not load (once per distinct error): a log line, a
// PolicyInvalid event on its ConfigMap, and metacel_policy_load_errors_total.
func (s *policySet) reportFailure(st *unitState, err error) {
	kept := names(st.good)
	msg := fmt.Sprintf("not loaded: %v", err)
	if len(kept) > 0 {
		msg = fmt.Sprintf("not loaded (the last good version of %s keeps running): %v", strings.Join(kept, ", "), err)
	}
	s.report(st, "PolicyInvalid", msg, func(logger klog.Logger, _ string) {
		s.metrics.loadError(st.unit.Name, kept)
		if len(kept) == 0 {
			logger.Error(err, "Policy failed to load")
			return
		}
		logger.Error(err, "Policy failed to load; its last good version keeps running", "kept", kept)
	})
}

// report records a Warning event on the unit's ConfigMap and calls log, unless the unit's last
// report was the same: a retry or a rescan that finds the same problem says nothing new.
func (s *policySet) report(st *unitState, reason, msg string, log func(logger klog.Logger, msg string)) {
	if st.reported == reason+": "+msg {
		return
	}
	st.reported = reason + ": " + msg
	log(klog.FromContext(s.ctx).WithValues("source", st.unit.Name), msg)
	unitEvent(s.recorder, st.unit, "Warning", reason, msg)
}

func anyMissing(ps []*policy.Compiled) bool {
	for _, p := range ps {
		if len(missingResources(p)) > 0 {
			return true
		}
	}
	return false
}

// howToServe says what makes the cluster serve a waiting policy's resources: their CRDs, which a
// policy that installs its parent's has just done (crdinstall.go).
func howToServe(p *policy.Compiled) string {
	if ps := p.Policy.Spec.ParentSchema; ps != nil && ps.Install {
		return "the parent's CRD is installed from parentSchema and served shortly; install the others' CRDs"
	}
	return "install their CRDs"
}

// missingResources lists the resources of a policy that the cluster does not serve.
func missingResources(p *policy.Compiled) []string {
	var out []string
	if p.Parent.Guessed {
		out = append(out, resourceName(p.Parent.GVR))
	}
	for gvr, r := range p.ChildResources {
		if r.Guessed {
			out = append(out, resourceName(gvr))
		}
	}
	for _, r := range p.Related {
		if r.Guessed {
			out = append(out, resourceName(r.GVR))
		}
	}
	sort.Strings(out)
	return out
}

// resourceName names a resource as kubectl does: gadgets.example.com/v1, or pods/v1.
func resourceName(gvr schema.GroupVersionResource) string {
	return gvr.GroupResource().String() + "/" + gvr.Version
}

type desiredPolicy struct {
	policy *policy.Compiled
	unit   *unitState
}

// resolveConflicts picks the policies to run: two policies with one name, or claiming one parent
// resource (in any of its versions: the objects are the same), cannot both run; the first in
// claim order (inClaimOrder, by ranks) wins and the other is reported. Called with s.mu held.
func (s *policySet) resolveConflicts(ranks map[claimKey]claimRank) map[string]desiredPolicy {
	desired := map[string]desiredPolicy{}
	parents := map[schema.GroupResource]desiredPolicy{}
	conflicts := map[*unitState]map[string]string{}
	for _, st := range s.units {
		conflicts[st] = map[string]string{}
	}
	for _, c := range inClaimOrder(claimsOf(s.units), ranks) {
		st, p := c.unit, c.policy
		if first, dup := desired[p.Name()]; dup {
			s.reject(st, p, fmt.Sprintf("policy %q is also defined in %s, which runs it: one definition per policy", p.Name(), first.unit.unit.Name), conflicts[st])
			continue
		}
		if first, dup := parents[p.Parent.GVR.GroupResource()]; dup {
			s.reject(st, p, fmt.Sprintf("policy %q claims parent resource %s, which policy %q (%s) already claims: one policy per parent resource",
				p.Name(), p.Parent.GVR.GroupResource(), first.policy.Name(), first.unit.unit.Name), conflicts[st])
			continue
		}
		d := desiredPolicy{policy: p, unit: st}
		desired[p.Name()], parents[p.Parent.GVR.GroupResource()] = d, d
	}
	for st, c := range conflicts {
		st.conflicts = c
	}
	return desired
}

// claimRanks reads the ranks of the claims of the set's units in a conflict (claimRanker), off
// the lock: it reads the API server.
func (s *policySet) claimRanks() map[claimKey]claimRank {
	k := claimRanker{ctx: s.ctx, records: s.rollouts.records, ledger: s.deps.Ledger, runningUnit: s.ctrls.unitRunning}
	return k.ranks(claimsOf(s.units))
}

// reject reports a policy that loses a conflict, once while the conflict lasts: reported holds
// the unit's conflicts reported so far in this round, st.conflicts those of the round before,
// each by policy name.
func (s *policySet) reject(st *unitState, p *policy.Compiled, msg string, reported map[string]string) {
	if r := s.ctrls.running[p.Name()]; r != nil && r.unit == st.unit.Name {
		return // it is the running one; the conflict is reported on the other side
	}
	reported[p.Name()] = msg
	if st.conflicts[p.Name()] == msg {
		return // reported when the conflict began
	}
	klog.FromContext(s.ctx).Error(nil, "Policy rejected", "source", st.unit.Name, "policy", p.Name(), "reason", msg)
	s.metrics.loadError(st.unit.Name, []string{p.Name()})
	unitEvent(s.recorder, st.unit, "Warning", "PolicyConflict", msg)
}

func sortedDesired(m map[string]desiredPolicy) []desiredPolicy {
	out := make([]desiredPolicy, 0, len(m))
	for _, d := range m {
		out = append(out, d)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].policy.Name() < out[j].policy.Name() })
	return out
}

// runLocked starts a policy's controller, or swaps the running one when the policy changed (or
// restart asks for it). A policy that rolls out its new versions step by step is started as its
// rollout record says (the rollout driver, rollout.go). The new controller takes its informers
// before the old one lets go of them, so shared informers keep running (no re-list); the new one
// then re-syncs its parents (every parent is an event to it). It reports whether the running
// version was kept as it was: the policy did not change.
func (s *policySet) runLocked(p *policy.Compiled, st *unitState, restart bool) (kept bool) {
	old := s.ctrls.running[p.Name()]
	if old == nil {
		s.startOverRemovedLocked(p, st)
		return false
	}
	old = s.rollouts.catchUpLocked(p.Name(), old) // a follower: the rollout under way may have ended
	if s.rollouts.runRolloutLocked(p, st, old, restart) {
		return false
	}
	if sameCompiled(old.policy, p) && !restart {
		old.unit = st.unit.Name
		return true
	}
	if r := s.ctrls.startLocked(p, st.unit, old, nil); r != nil {
		s.rollouts.recordStableLocked(r)
	}
	return false
}

// startOverRemovedLocked starts a policy that does not run: new, or loaded again while the
// controller of its removal still finishes its Recreates, which then hands over to it as a
// changed version's would (or, for a policy that rolls out, stops first).
func (s *policySet) startOverRemovedLocked(p *policy.Compiled, st *unitState) {
	removed := s.ctrls.takeRemoving(p.Name())
	if removed != nil && p.Rollout != nil {
		s.ctrls.stopRemoved(p.Name(), removed)
		removed = nil
	}
	if removed == nil && s.rollouts.runRolloutLocked(p, st, nil, false) {
		return
	}
	r := s.ctrls.startLocked(p, st.unit, removed, nil)
	if r == nil {
		if removed != nil {
			s.ctrls.stopRemoved(p.Name(), removed) // nothing takes it over
		}
		return
	}
	s.rollouts.recordStableLocked(r)
}

// removeLocked stops the controller of a policy that was removed (controllers.removeLocked),
// and records, when no unit defines the policy any more, that it stopped: it claims its parent
// resource no more.
func (s *policySet) removeLocked(name string, r *running) {
	if !s.definedLocked(name) {
		s.rollouts.recordStoppedLocked(r)
	}
	s.ctrls.removeLocked(name, r)
}

// definedLocked reports whether a unit still defines the policy of that name (one that stops
// while it waits for its resources, say, keeps its claim). Called with the controllers' lock held.
func (s *policySet) definedLocked(name string) bool {
	for _, st := range s.units {
		for _, p := range st.good {
			if p.Name() == name {
				return true
			}
		}
	}
	return false
}

// recallMemo gives a controller about to run the memo its policy's controller saved in memos
// (nil: none) when it last stopped, if it may use one.
func recallMemo(ctx context.Context, memos *memo.Store, ctrl *controller.Controller) {
	if memos == nil || !ctrl.Memory().Memoizable() {
		return
	}
	entries, err := memos.Load(ctx, ctrl.Name(), ctrl.Memory().Scope())
	if err != nil {
		klog.FromContext(ctx).Error(err, "Every parent is synced in full: the memo cannot be read", "policy", ctrl.Name())
		return
	}
	ctrl.Memory().Recall(entries)
}

// saveMemo saves in memos (nil: none) what a stopped controller knew of its converged parents,
// for the next start; it writes even once ctx is done (the runtime stops), within memoSaveTimeout.
func saveMemo(ctx context.Context, memos *memo.Store, ctrl *controller.Controller) {
	if memos == nil || !ctrl.Memory().Memoizable() {
		return
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), memoSaveTimeout)
	defer cancel()
	if err := memos.Save(ctx, ctrl.Name(), ctrl.Memory().Scope(), ctrl.Memory().Entries()); err != nil {
		klog.FromContext(ctx).Error(err, "The next start syncs every parent in full: the memo cannot be written", "policy", ctrl.Name())
	}
}

// memoSaveTimeout bounds the writes of memos when the runtime stops, within the default
// terminationGracePeriodSeconds of 30.
const memoSaveTimeout = 5 * time.Second

// sameCompiled reports whether a reload changed nothing that matters: the policy's version (what
// it does, rollout.Version: its text, less the labels and annotations the runtime does not read)
// and what the cluster said of its resources.
func sameCompiled(a, b *policy.Compiled) bool {
	return rollout.Version(a) == rollout.Version(b) && reflect.DeepEqual(a.Parent, b.Parent) &&
		reflect.DeepEqual(a.ChildResources, b.ChildResources) && slices.EqualFunc(a.Related, b.Related, sameResource)
}

// sameResource reports whether two related entries read resources the cluster says the same of.
func sameResource(a, b policy.CompiledRelated) bool { return reflect.DeepEqual(a.Info, b.Info) }

// unitEvent records an event with recorder (nil: none) on the ConfigMap a unit comes from; units
// from files have none.
func unitEvent(recorder events.EventRecorder, u source.Unit, typ, reason, note string) {
	if u.ConfigMap == nil || recorder == nil {
		return
	}
	if len(note) > 1000 {
		note = note[:1000] + "..."
	}
	recorder.Eventf(u.ConfigMap, nil, typ, reason, "Load", "%s", note)
}

func names(ps []*policy.Compiled) []string {
	out := make([]string, len(ps))
	for i, p := range ps {
		out[i] = p.Name()
	}
	return out
}

// policyMetrics are the metacel_policy_* metrics.
type policyMetrics struct {
	info       *prometheus.GaugeVec
	loadErrors *prometheus.CounterVec
	// sameVersions counts the loads of a policy that left its running version as it was
	sameVersions *prometheus.CounterVec
	parents      *prometheus.GaugeVec
	// states are each policy's state and its parents by condition (statemetrics.go)
	states *stateMetrics
}

func newPolicyMetrics(reg prometheus.Registerer) *policyMetrics {
	m := &policyMetrics{
		info: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "metacel_policy_info",
			Help: "A running policy: 1 per policy, labelled with its source and generation (reloads + 1).",
		}, []string{"policy", "source", "generation"}),
		loadErrors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "metacel_policy_load_errors_total",
			Help: "Policy versions that failed to load (parse, validation, compilation) or were rejected (conflicts), each counted once: retries of the same version are not counted.",
		}, []string{"policy"}),
		sameVersions: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "metacel_policy_same_version_loads_total",
			Help: "Loads of a policy that found the version running (its source changed elsewhere: another policy of its ConfigMap key or file, or its own labels and annotations that the runtime does not read): nothing started again, nothing synced.",
		}, []string{"policy"}),
	}
	m.parents = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "metacel_policy_parents",
		Help: "Parents a policy's controller syncs in this process: all of them, or this replica's share with sharding.",
	}, []string{"policy"})
	reg.MustRegister(m.info, m.loadErrors, m.sameVersions, m.parents)
	m.states = newStateMetrics(reg)
	return m
}

func (m *policyMetrics) loaded(policy, src string, generation int) {
	m.info.DeletePartialMatch(prometheus.Labels{"policy": policy})
	m.info.WithLabelValues(policy, src, fmt.Sprint(generation)).Set(1)
}

func (m *policyMetrics) sameVersion(policy string) { m.sameVersions.WithLabelValues(policy).Inc() }

func (m *policyMetrics) removed(policy string) {
	m.info.DeletePartialMatch(prometheus.Labels{"policy": policy})
	m.parents.DeleteLabelValues(policy)
}

// loadError counts a failed load against the policies the unit held, or the unit itself when it
// never loaded.
func (m *policyMetrics) loadError(unit string, policies []string) {
	if len(policies) == 0 {
		policies = []string{strings.TrimSuffix(unit, ".yaml")}
	}
	for _, p := range policies {
		m.loadErrors.WithLabelValues(p).Inc()
	}
}
