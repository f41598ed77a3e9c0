package controller

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"sync/atomic"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"

	"metacel.dev/metacel/runtime/compact"
	"metacel.dev/metacel/runtime/contract"
	"metacel.dev/metacel/runtime/decide"
	"metacel.dev/metacel/runtime/expr"
	"metacel.dev/metacel/runtime/policy"
	"metacel.dev/metacel/runtime/render"
)

// syncer syncs the parents of one policy, one at a time per parent (the controller's loop calls
// sync): what every sync uses, set once when the controller is made. One sync's own values are a
// parentSync.
type syncer struct {
	policy *policy.Compiled
	deps   *Deps
	// caches are the controller's caches, share the parents it syncs, states what it remembers
	// of each parent, related its watch of the related objects
	caches  *caches
	share   *share
	states  *parentStates
	related *relatedWatch
	access  *access
	// writer writes the children, cleanup cleans up after them, reporter reports on the parent,
	// drain completes Recreates under way when the policy was removed
	writer   *childWriter
	cleanup  *cleanup
	reporter *reporter
	drain    *drain
	// requeueAfter syncs a parent again after a while
	requeueAfter func(key string, d time.Duration)
	// previous is the version of the policy this controller replaces (Options.Replaces; TakeAll
	// changes it), or nil
	previous atomic.Pointer[policy.Compiled]
}

// sync brings one parent's children and status in line with its policy, in steps over what the
// caches hold and what the controller remembers of the parent (parentState).
func (y *syncer) sync(ctx context.Context, key string) error {
	// 1. Read the parent from the cache; one gone is forgotten, and let go of if it left with the
	// cleanup finalizer.
	cached, err := y.cachedParent(key)
	if err != nil {
		return err
	}
	if cached == nil {
		return y.syncGone(ctx, key)
	}
	// 2. Leave alone a parent another replica (sharding) or version (a rollout) holds.
	ctx, ours := y.share.writesFor(ctx, cached.GetUID())
	if !ours {
		return nil
	}
	if y.deps.OnSync != nil {
		start := y.deps.Clock.Now()
		defer func() { y.deps.OnSync(y.policy.Name(), key, start, y.deps.Clock.Now()) }()
	}
	// 3. Read its children from the cache; a removed policy only completes Recreates under way.
	s := &parentSync{y: y, key: key, cached: cached, children: y.caches.cachedChildren(cached.GetUID())}
	if y.drain.skips(key) {
		return nil
	}
	// 4. Skip the sync when its inputs are those of the last successful one: nothing decoded.
	if s.unchangedFromCache() {
		return nil
	}
	// 5. Decode the parent; one being deleted is finalized.
	if s.parent, err = compact.Unstructured(cached); err != nil {
		return fmt.Errorf("parent %q: %w", key, err)
	}
	if s.parent.GetDeletionTimestamp() != nil {
		if err := y.cleanup.finalize(ctx, s.parent); err != nil {
			return y.reporter.fail(ctx, s.parent, err) // a child's deletion refused: the parent says why it stays
		}
		return nil
	}
	// 6. Decode its children and read its related objects, as its identity may.
	if err := s.readInputs(ctx); err != nil {
		y.states.forgetInputs(key)
		return y.reporter.fail(ctx, s.parent, err)
	}
	// 7. Skip it when these inputs, related objects included, are those of the last success.
	inputs, known := fingerprint(cached, s.children, s.related)
	if known && y.states.sameInputs(key, inputs) {
		y.states.settleChildEvents(key)
		return nil
	}
	// 8. Render, write what differs, and remember the inputs the writes left.
	y.states.forgetInputs(key)
	left, err := s.reconcile(ctx)
	if err != nil {
		return err
	}
	if known && left.deferred == 0 && !left.timed {
		if after, ok := s.inputsLeft(inputs, left); ok {
			y.states.rememberInputs(key, after)
		}
	}
	return nil
}

// parentSync is one sync of one parent (kro's ReconcileContext): what it read from the caches
// and decoded, which its steps share. sync fills it step by step.
type parentSync struct {
	y   *syncer
	key string
	// cached is the parent, and children its children, as the caches hold them
	cached   metav1.Object
	children []metav1.Object
	// parent is the parent decoded; observed its children, decoded, by child id; related its
	// related objects, by related id
	parent            *unstructured.Unstructured
	observed, related map[string][]*unstructured.Unstructured
	// budget is what is left of the cost budget that every expression of the sync spends
	budget *expr.Budget
}

// syncGone handles a parent the cache no longer holds: one that left with the cleanup finalizer
// is let go of; a deleted parent's owned children go with it (garbage collection).
func (y *syncer) syncGone(ctx context.Context, key string) error {
	if uid, ok := y.cleanup.left.take(key); ok {
		ctx, _ := y.share.writesFor(ctx, uid) // whether still in the share or not: the fence judges
		return y.cleanup.letGo(ctx, key, uid)
	}
	return nil
}

// unchangedFromCache reports whether the inputs of a parent, read from the caches' metadata, are
// those of its last successful sync, here or before a restart (memo.go): the sync is then
// skipped. Only a policy without related objects knows its inputs before decoding, and a parent
// being deleted is never skipped.
func (s *parentSync) unchangedFromCache() bool {
	y := s.y
	if len(y.policy.Related) > 0 || s.cached.GetDeletionTimestamp() != nil {
		return false
	}
	inputs, known := fingerprint(s.cached, s.children, nil)
	if !known || !y.states.sameInputs(s.key, inputs) && !y.states.knewFromMemo(s.key, s.cached.GetUID(), inputs) {
		return false
	}
	y.states.settleChildEvents(s.key)
	return true
}

// readInputs decodes a parent's observed children, checks that its identity may read them and
// the parent, and reads its related objects, with the budget every expression of the sync spends
// together.
func (s *parentSync) readInputs(ctx context.Context) (err error) {
	s.observed = observedChildren(ctx, s.children)
	if err := s.y.access.mayReadParentAndChildren(ctx, s.parent, s.observed); err != nil {
		return err
	}
	s.budget = expr.NewBudget()
	s.related, err = s.y.related.read(ctx, s.key, s.parent, s.budget)
	return err
}

// reconcile renders a parent and writes what differs: the finalizer, the children (applied,
// then the undesired ones pruned), the status. It says what its writes left.
func (s *parentSync) reconcile(ctx context.Context) (left, error) {
	y, key, parent := s.y, s.key, s.parent
	in := render.Input{Parent: parent, Related: s.related, Mapper: y.deps.Mapper, Namespaces: y.related.namespaceLabels, Budget: s.budget,
		ReservedNamespace: y.deps.ReservedNamespace, CheckRecord: true}
	out, kids, w, last, err := s.renderAndWrite(ctx, in)
	if out == nil {
		return left{}, err
	}
	y.states.recordRecreating(key, w.recreating, err == nil)
	y.drain.wake()
	if rerr := y.cleanup.recordChildren(ctx, parent, kids, w.objects); err == nil {
		err = rerr
	}
	if err != nil {
		return left{}, y.reporter.fail(ctx, parent, err)
	}
	if w.writes == 0 {
		y.states.settleChildEvents(key) // the next child event is news, not an echo
	} else {
		y.states.wroteChildren(key)
	}
	if w.deferred > 0 {
		y.requeueAfter(key, w.deferred) // its bookkeeping patches, when the pace allows them
	}
	out, sawWrites := decide.AfterWrites(ctx, y.policy, in, out, kids.ByID, last)
	conds, timed := s.heldUp(out.Conditions(), w.holding)
	status, _, err := y.reporter.updateStatus(ctx, parent, out.Status, conds)
	return left{written: w, parent: status, statusBeforeWrites: !sawWrites, held: len(out.Held) > 0, timed: timed}, err
}

// heldUp is the conditions of a sync whose deletions of children no longer desired wait for a
// child being deleted (holding; nil: none): past DeletionDeadline, Ready says DeletionBlocked,
// naming it, as a deleted parent's does (cleanup.holdUp); before, the parent is synced again at
// the deadline (timed). Its deletion re-syncs the parent anyway.
func (s *parentSync) heldUp(conds []render.Condition, holding *unstructured.Unstructured) (_ []render.Condition, timed bool) {
	if holding == nil {
		return conds, false
	}
	if left := DeletionDeadline - s.y.deps.Clock.Since(holding.GetDeletionTimestamp().Time); left > 0 {
		s.y.requeueAfter(s.key, left)
		return conds, true
	}
	for i := range conds {
		if conds[i].Type == contract.ConditionReady {
			conds[i] = render.Condition{Type: contract.ConditionReady, Status: "False", Reason: contract.ReasonDeletionBlocked, Message: deletionBlockedMessage(holding)}
		}
	}
	return conds, false
}

// renderAndWrite renders the parent and writes what differs, in waves, as long as
// decide.RenderAgain says (a Deployment that reads its Secret's name, created right after the
// Secret, in the same sync). It returns the
// last render, the writes of every wave together and those of the last wave alone; out is nil when
// the render failed (err is then the failure reported).
func (s *parentSync) renderAndWrite(ctx context.Context, in render.Input) (out *render.Output, kids *render.ObservedChildren, all written, last []*unstructured.Unstructured, err error) {
	y, parent := s.y, s.parent
	objs := allObjects(s.observed)
	for wave := 0; ; wave++ {
		start := y.deps.Clock.Now()
		o, k, err := render.RenderObserved(ctx, y.policy, in, objs)
		y.deps.Metrics.observeRender(y.policy.Name(), y.deps.Clock.Since(start).Seconds())
		if err != nil {
			if wave == 0 {
				return nil, nil, all, nil, y.reporter.fail(ctx, parent, err)
			}
			return out, kids, all, last, nil // the last wave's writes stand; the next sync renders again
		}
		if err := y.cleanup.ensureFinalizer(ctx, parent, o, k); err != nil {
			return nil, nil, all, nil, y.reporter.fail(ctx, parent, err) // refused (RBAC, a webhook): the parent says so
		}
		out, kids = o, k
		w, err := y.writer.write(ctx, parent, decide.Writes(o, k, y.policy, y.previous.Load()))
		all.add(w)
		last = w.objects
		stop := err != nil || len(w.recreating) > 0 // a step failed, or waits for a child to go
		if !decide.RenderAgain(y.policy, parent, o, wave, decide.Wave{Written: w.objects, Writes: w.writes, Deletes: w.deletes, Stop: stop}) {
			return out, kids, all, last, err
		}
		objs = decide.ObjectsAfter(objs, w.objects)
	}
}

// left is what a sync's writes left: the children written, as the API server returned them, and
// the parent's metadata after its status write (nil: not written, or not known).
type left struct {
	written
	parent *metav1.ObjectMeta
	// statusBeforeWrites: the status written was rendered without the children written (see
	// statusAfterWrites), so their events must bring a sync that renders it with them
	statusBeforeWrites bool
	// held: a child entry waited for a child (render.Output.Held), maybe one this sync wrote, so
	// the events of its writes must bring a sync that renders again
	held bool
	// timed: the sync asked to be synced again at a time (heldUp's deadline), when nothing in the
	// cluster may have changed: its inputs are not remembered, or that sync would be skipped
	timed bool
}

// inputsLeft returns the inputs a successful sync leaves for the next one to compare (unchanged),
// and false when it leaves none: its own when it wrote nothing. After writes, when they changed
// nothing a render reads but the objects written (the parent's status, which the policy's
// expressions do not read, and children created or applied), the inputs as the writes returned
// them: the events of the sync's own writes then cause no render. Otherwise (a deletion, a policy
// that reads the parent's status or related objects, a parent that changed meanwhile, a status
// rendered without the children written) none: not the inputs before the writes, which the
// world can come back to when someone undoes them (a child taken out of the index, patched back,
// then out again), and a sync must then write again.
func (s *parentSync) inputsLeft(before uint64, l left) (uint64, bool) {
	y, cached, children, parent := s.y, s.cached, s.children, s.parent
	if l.writes == 0 && l.parent == nil {
		return before, true
	}
	if l.deletes > 0 || l.writes != len(l.objects) || len(y.policy.Related) > 0 || l.statusBeforeWrites || l.held {
		return 0, false
	}
	after := cached
	if l.parent != nil {
		if y.policy.ReadsParentStatus || !onlyStatusChanged(parent, l.parent) {
			return 0, false
		}
		after = l.parent
	}
	kids := make([]metav1.Object, 0, len(children)+len(l.objects))
	wrote := map[types.UID]bool{}
	for _, o := range l.objects {
		wrote[o.GetUID()] = true
		kids = append(kids, o)
	}
	for _, m := range children {
		if !wrote[m.GetUID()] {
			kids = append(kids, m)
		}
	}
	return fingerprint(after, kids, nil)
}

// onlyStatusChanged reports whether a parent as a status write returned it is the parent a sync
// rendered but for its status: the same object, generation (its spec), labels, annotations
// (kubectl's last-applied copy aside, which the caches drop), owners and finalizers, and not
// being deleted.
func onlyStatusChanged(rendered *unstructured.Unstructured, written *metav1.ObjectMeta) bool {
	withoutLastApplied := func(m map[string]string) map[string]string {
		if _, ok := m[compact.LastApplied]; !ok {
			return m
		}
		m = maps.Clone(m)
		delete(m, compact.LastApplied)
		return m
	}
	return rendered.GetUID() == written.UID && rendered.GetGeneration() == written.Generation &&
		written.DeletionTimestamp == nil && rendered.GetDeletionTimestamp() == nil &&
		maps.Equal(rendered.GetLabels(), written.Labels) &&
		maps.Equal(withoutLastApplied(rendered.GetAnnotations()), withoutLastApplied(written.Annotations)) &&
		slices.Equal(rendered.GetFinalizers(), written.Finalizers) &&
		equality.Semantic.DeepEqual(rendered.GetOwnerReferences(), written.OwnerReferences)
}

// cachedParent returns a parent as the cache holds it (its metadata; compact.Unstructured decodes
// it), to be read, never modified; nil when it is gone, after letting go of a parent that left
// with the cleanup finalizer and forgetting what was remembered of it.
func (y *syncer) cachedParent(key string) (metav1.Object, error) {
	m, exists, err := y.caches.parents.GetByKey(key)
	if err != nil {
		return nil, err
	}
	if exists {
		return m, nil
	}
	y.states.forget(key)
	y.related.index.forget(key)
	y.drain.wake()
	return nil, nil
}
