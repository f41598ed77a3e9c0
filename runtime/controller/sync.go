package controller

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"

	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/klog/v2"

	"metacel.dev/metacel/runtime/apply"
	"metacel.dev/metacel/runtime/compact"
	"metacel.dev/metacel/runtime/decide"
	"metacel.dev/metacel/runtime/expr"
	"metacel.dev/metacel/runtime/informers"
	"metacel.dev/metacel/runtime/render"
)

// sync brings one parent's children and status in line with its policy, in steps over what the
// caches hold and what the controller remembers of the parent (parentState).
func (c *Controller) sync(ctx context.Context, key string) error {
	// 1. Read the parent from the cache; one gone is forgotten, and let go of if it left with the
	// cleanup finalizer.
	cached, err := c.cachedParent(key)
	if err != nil {
		return err
	}
	if cached == nil {
		return c.syncGone(ctx, key)
	}
	// 2. Leave alone a parent another replica (sharding) or version (a rollout) holds.
	if !c.holds(cached.GetUID()) {
		return nil
	}
	ctx = c.writesFor(ctx, cached.GetUID())
	if c.deps.OnSync != nil {
		start := c.deps.Clock.Now()
		defer func() { c.deps.OnSync(c.Name(), key, start, c.deps.Clock.Now()) }()
	}
	// 3. Read its children from the cache; a removed policy only completes Recreates under way.
	children := c.cachedChildren(cached.GetUID())
	if c.draining.Load() && !c.parentStates.recreatingAny(key) {
		return nil
	}
	// 4. Skip the sync when its inputs are those of the last successful one: nothing decoded.
	if c.unchangedFromCache(key, cached, children) {
		return nil
	}
	// 5. Decode the parent; one being deleted is finalized.
	parent, err := compact.Unstructured(cached)
	if err != nil {
		return fmt.Errorf("parent %q: %w", key, err)
	}
	if parent.GetDeletionTimestamp() != nil {
		return c.finalize(ctx, parent)
	}
	// 6. Decode its children and read its related objects, as its identity may.
	observed, related, budget, err := c.readInputs(ctx, key, parent, children)
	if err != nil {
		c.parentStates.forgetInputs(key)
		return c.fail(ctx, parent, err)
	}
	// 7. Skip it when these inputs, related objects included, are those of the last success.
	inputs, known := fingerprint(cached, children, related)
	if known && c.parentStates.sameInputs(key, inputs) {
		c.parentStates.settleChildEvents(key)
		return nil
	}
	// 8. Render, write what differs, and remember the inputs the writes left.
	c.parentStates.forgetInputs(key)
	left, err := c.reconcile(ctx, key, parent, observed, related, budget)
	if err != nil {
		return err
	}
	if known && left.deferred == 0 {
		if after, ok := c.inputsLeft(inputs, cached, children, parent, left); ok {
			c.parentStates.rememberInputs(key, after)
		}
	}
	return nil
}

// syncGone handles a parent the cache no longer holds: one that left with the cleanup finalizer
// is let go of; a deleted parent's owned children go with it (garbage collection).
func (c *Controller) syncGone(ctx context.Context, key string) error {
	if uid, ok := c.takeLeftWithFinalizer(key); ok {
		return c.letGo(c.writesFor(ctx, uid), key, uid)
	}
	return nil
}

// unchangedFromCache reports whether the inputs of a parent, read from the caches' metadata, are
// those of its last successful sync, here or before a restart (memo.go): the sync is then
// skipped. Only a policy without related objects knows its inputs before decoding, and a parent
// being deleted is never skipped.
func (c *Controller) unchangedFromCache(key string, cached metav1.Object, children []metav1.Object) bool {
	if len(c.policy.Related) > 0 || cached.GetDeletionTimestamp() != nil {
		return false
	}
	inputs, known := fingerprint(cached, children, nil)
	if !known || !c.parentStates.sameInputs(key, inputs) && !c.recalled(key, cached.GetUID(), inputs) {
		return false
	}
	c.parentStates.settleChildEvents(key)
	return true
}

// readInputs decodes a parent's observed children, checks that its identity may read them and
// the parent, and reads its related objects, with the budget every expression of the sync spends
// together.
func (c *Controller) readInputs(ctx context.Context, key string, parent *unstructured.Unstructured, children []metav1.Object) (observed, related map[string][]*unstructured.Unstructured, budget *expr.Budget, err error) {
	observed = c.observedChildren(ctx, children)
	if err := c.mayReadParentAndChildren(ctx, parent, observed); err != nil {
		return nil, nil, nil, err
	}
	budget = expr.NewBudget()
	related, err = c.readRelated(ctx, key, parent, budget)
	if err != nil {
		return nil, nil, nil, err
	}
	return observed, related, budget, nil
}

// reconcile renders a parent and writes what differs: the finalizer, the children (applied,
// then the undesired ones pruned), the status. It says what its writes left.
func (c *Controller) reconcile(ctx context.Context, key string, parent *unstructured.Unstructured, found, related map[string][]*unstructured.Unstructured, budget *expr.Budget) (left, error) {
	start := c.deps.Clock.Now()
	in := render.Input{Parent: parent, Related: related, Mapper: c.deps.Mapper, Namespaces: c.namespaceLabels, Budget: budget,
		ReservedNamespace: c.deps.ReservedNamespace, CheckRecord: true}
	out, kids, err := render.RenderObserved(ctx, c.policy, in, allObjects(found))
	c.deps.Metrics.observeRender(c.Name(), c.deps.Clock.Since(start).Seconds())
	if err != nil {
		return left{}, c.fail(ctx, parent, err)
	}
	if err := c.ensureFinalizer(ctx, parent, out, kids); err != nil {
		return left{}, err
	}
	w, err := c.write(ctx, parent, decide.Writes(out, kids, c.policy, c.previous))
	c.parentStates.recordRecreating(key, w.recreating, err == nil)
	c.wakeDrain()
	if rerr := c.recordChildren(ctx, parent, kids, w.objects); err == nil {
		err = rerr
	}
	if err != nil {
		return left{}, c.fail(ctx, parent, err)
	}
	if w.writes == 0 {
		c.parentStates.settleChildEvents(key) // the next child event is news, not an echo
	} else {
		c.parentStates.wroteChildren(key)
	}
	if w.deferred > 0 {
		c.queue.AddAfter(key, w.deferred) // its bookkeeping patches, when the pace allows them
	}
	out, sawWrites := decide.AfterWrites(ctx, c.policy, in, out, kids.ByID, w.objects)
	status, _, err := c.updateStatus(ctx, parent, out.Status, out.Conditions())
	return left{written: w, parent: status, statusBeforeWrites: !sawWrites}, err
}

// left is what a sync's writes left: the children written, as the API server returned them, and
// the parent's metadata after its status write (nil: not written, or not known).
type left struct {
	written
	parent *metav1.ObjectMeta
	// statusBeforeWrites: the status written was rendered without the children written (see
	// statusAfterWrites), so their events must bring a sync that renders it with them
	statusBeforeWrites bool
}

// inputsLeft returns the inputs a successful sync leaves for the next one to compare (unchanged),
// and false when it leaves none: its own when it wrote nothing. After writes, when they changed
// nothing a render reads but the objects written (the parent's status, which the policy's
// expressions do not read, and children created or applied), the inputs as the writes returned
// them: the events of the sync's own writes then cause no render. Otherwise (a deletion, a policy
// that reads the parent's status or related objects, a parent that changed meanwhile, a status
// rendered without the children written) none: not the inputs before the writes, which the
// world can come back to when someone undoes them (a child taken out of the caches, patched back,
// then out again), and a sync must then write again.
func (c *Controller) inputsLeft(before uint64, cached metav1.Object, children []metav1.Object, parent *unstructured.Unstructured, l left) (uint64, bool) {
	if l.writes == 0 && l.parent == nil {
		return before, true
	}
	if l.deletes > 0 || l.writes != len(l.objects) || len(c.policy.Related) > 0 || l.statusBeforeWrites {
		return 0, false
	}
	after := cached
	if l.parent != nil {
		if c.policy.ReadsParentStatus || !onlyStatusChanged(parent, l.parent) {
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

// allObjects flattens objects by child id.
func allObjects(byID map[string][]*unstructured.Unstructured) []*unstructured.Unstructured {
	var out []*unstructured.Unstructured
	for _, objs := range byID {
		out = append(out, objs...)
	}
	return out
}

// cachedParent returns a parent as the cache holds it (its metadata; compact.Unstructured decodes
// it), to be read, never modified; nil when it is gone, after letting go of a parent that left
// with the cleanup finalizer and forgetting what was remembered of it.
func (c *Controller) cachedParent(key string) (metav1.Object, error) {
	obj, exists, err := c.parents.GetByKey(key)
	if err != nil {
		return nil, err
	}
	if exists {
		return informers.MetaOf(obj)
	}
	c.parentStates.forget(key)
	c.relIndex.forget(key)
	c.wakeDrain()
	return nil, nil
}

// cachedChildren returns the objects of the policy that the caches hold for a parent (through the
// parent-uid index), whoever applied them, as their metadata: compact.Unstructured decodes one.
func (c *Controller) cachedChildren(uid types.UID) []metav1.Object {
	var out []metav1.Object
	for _, rc := range c.children {
		objs, _ := rc.ByIndex(informers.ByParentUID, string(uid))
		for _, obj := range objs {
			if m, err := informers.MetaOf(obj); err == nil && m.GetLabels()[render.LabelPolicy] == c.Name() {
				out = append(out, m)
			}
		}
	}
	return out
}

// observedChildren decodes the policy's objects cached for a parent (cachedChildren) into its
// children, by child id. Only objects metacel applied are children: an object made by someone
// else that merely carries a parent's labels is not (a child of its name is a conflict).
func (c *Controller) observedChildren(ctx context.Context, cached []metav1.Object) map[string][]*unstructured.Unstructured {
	out := map[string][]*unstructured.Unstructured{}
	for _, m := range cached {
		u, err := compact.Unstructured(m)
		if err != nil {
			utilruntime.HandleErrorWithContext(ctx, err, "Skipping a child the cache cannot decode", "child", klog.KObj(m))
			continue
		}
		if !apply.AppliedBy(u) {
			continue
		}
		id := u.GetLabels()[render.LabelChildID]
		out[id] = append(out[id], u)
	}
	return out
}

// syncError is a failure to apply, with the reason reported on the parent.
type syncError struct {
	reason string
	err    error
	retry  bool
}

func (e *syncError) Error() string { return e.err.Error() }
func (e *syncError) Unwrap() error { return e.err }

// Reasons of failures after render.
const (
	ReasonApplyFailed   = "ApplyFailed"
	ReasonChildConflict = "ChildConflict"
	// ReasonStatusFailed is the reason of the Warning event of a status write that failed.
	ReasonStatusFailed = "StatusFailed"
)

// fail reports a failed sync on the parent (Synced=False, and a Warning event when the condition
// is new) and says whether to retry: render errors and invalid requests wait for an input to
// change; API errors and conflicts are retried with backoff. A write the write fence refused is
// not reported: this replica may no longer write for the parent, an event included (events carry
// no slot, so the fence would let one through), and the replica that holds it reports.
func (c *Controller) fail(ctx context.Context, parent *unstructured.Unstructured, err error) error {
	if apierrors.ReasonForError(err) == reasonWriteFenced {
		return err // this replica may no longer write for the parent: neither its status nor an event
	}
	var se *syncError
	reason, retry := render.ReasonEvaluationError, false
	switch {
	case errors.As(err, &se):
		reason, retry = se.reason, se.retry
	case isRenderError(err):
		reason = render.ErrorConditions(err, reason)[0].Reason
	}
	conds := render.FailureConditions(reason, err.Error())
	_, changed, serr := c.updateStatus(ctx, parent, nil, conds)
	if changed {
		c.deps.Recorder.Eventf(parent, nil, "Warning", reason, "Sync", "%s", err.Error())
	}
	klog.FromContext(ctx).V(2).Info("Sync failed", "reason", reason, "err", err)
	var perm *permanentError
	switch {
	case serr != nil && !errors.As(serr, &perm):
		return errors.Join(err, serr)
	case retry:
		return err
	}
	return &permanentError{err: err}
}

func isRenderError(err error) bool {
	var re *render.Error
	return errors.As(err, &re)
}
