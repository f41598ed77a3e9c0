package controller

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync/atomic"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"

	"metacel.dev/metacel/runtime/apply"
	"metacel.dev/metacel/runtime/compact"
	"metacel.dev/metacel/runtime/contract"
	"metacel.dev/metacel/runtime/decide"
	"metacel.dev/metacel/runtime/policy"
	"metacel.dev/metacel/runtime/render"
)

// childWriter writes a policy's children: it carries out the steps of a sync (decide.Writes)
// against the API server, and owns the guards around them: the writes the API server refused
// for good (refusedwrites.go), fights over a child (undonewrites.go), the children created lately
// that the cache does not show yet (recentcreates.go), the Recreates under way
// (recreatesunderway.go) and the pace of bookkeeping patches. Creating, updating, recreating,
// patching or removing one child reads in this file.
type childWriter struct {
	// policy is the policy's name, resources its child resources
	policy    string
	resources map[schema.GroupVersionResource]policy.ChildResourceInfo
	// deps are the controller's (its Writer the policy's identity's)
	deps *Deps
	// states is what the controller remembers of each parent
	states *parentStates
	// caches are the controller's: the writer notes its creates in them, and reads them back
	caches *caches
	// draining is set when the policy was removed: only Recreates under way complete
	draining *atomic.Bool
}

// write carries out a sync's steps (decide.Writes) in order: children created, applied,
// recreated, then those no longer desired deleted or released. A child that already matches has
// no step and costs no write. It says what it wrote: how many writes, and the children as the API
// server returned them.
//
// A step that fails does not hold the other children's creates and updates (a fight over one
// child, a quota refusing another, leaves the rest as the policy wants them), but nothing is
// deleted or recreated after a failure: a child renamed whose new object could not be created
// keeps its old one. The sync's error is the first failure's, joined with the others.
func (cw *childWriter) write(ctx context.Context, parent *unstructured.Unstructured, steps []decide.Step) (written, error) {
	var w written
	var errs []error
	steps, w.deferred = cw.paceBookkeeping(parent, steps)
	for _, s := range steps {
		if len(errs) > 0 && removes(s) {
			continue
		}
		if err := cw.take(ctx, parent, s, &w); err != nil {
			errs = append(errs, err)
		}
	}
	if len(errs) == 1 {
		return w, errs[0]
	}
	return w, errors.Join(errs...)
}

// removes reports whether a step deletes a child: a deletion or a release of one no longer
// desired, or a recreation.
func removes(s decide.Step) bool {
	return s.Action == decide.Delete || s.Action == decide.Release || s.Action == decide.Recreate
}

// take carries out one step of a sync, and adds what it wrote to w.
func (cw *childWriter) take(ctx context.Context, parent *unstructured.Unstructured, s decide.Step, w *written) error {
	if !cw.finishes(parent, s) {
		return nil // the policy was removed: only Recreates under way complete (recreatesunderway.go)
	}
	switch s.Action {
	case decide.Await:
		w.waitFor(s.Child) // created once it is gone, by the sync its deletion causes
		return nil
	case decide.Delete, decide.Release:
		w.deletes++
		return cw.remove(ctx, parent, s)
	case decide.Wait: // deleted by the sync that the deletion of the one it waits for causes
		klog.FromContext(ctx).V(3).Info("Child waits to be deleted", "child", klog.KObj(s.Observed), "kind", s.Observed.GetKind(), "waitsFor", klog.KObj(s.Blocker))
		w.holding = firstDeleted(w.holding, s.Blocker)
		return nil
	case decide.Conflict:
		return conflictError(parent, s.Child, cw.policy)
	case decide.Refuse: // the API server would refuse the update: no request
		return &syncError{reason: contract.ReasonApplyFailed, terminal: true, err: errors.New(s.Why)}
	case decide.UpdateBookkeeping:
		got, err := cw.patchBookkeeping(ctx, parent, s)
		if err != nil {
			return err
		}
		w.writes++
		w.objects = append(w.objects, got)
		return nil
	}
	w.writes++
	if s.Action == decide.Recreate {
		w.deletes++ // deleted, then created again
	}
	got, waiting, err := cw.applyChild(ctx, parent, s.Child, s.Observed)
	switch {
	case err != nil:
		return err
	case got != nil:
		w.objects = append(w.objects, got)
	case waiting:
		w.waitFor(s.Child) // deleted: created once it is gone
	}
	return nil
}

// paceBookkeeping leaves out a sync's bookkeeping patches when the pace (BookkeepingPace) has
// no token for them, and says after how long the parent may send them.
func (cw *childWriter) paceBookkeeping(parent *unstructured.Unstructured, steps []decide.Step) ([]decide.Step, time.Duration) {
	n := 0
	for _, s := range steps {
		if s.Action == decide.UpdateBookkeeping {
			n++
		}
	}
	if n == 0 {
		return steps, 0 // no key to make on the syncs of every converged parent
	}
	if ok, wait := cw.deps.Pace.admit(cw.policy+"/"+parentKey(parent), n, cw.deps.Clock.Now()); !ok {
		return slices.DeleteFunc(slices.Clone(steps), func(s decide.Step) bool { return s.Action == decide.UpdateBookkeeping }), wait
	}
	return steps, 0
}

// patchBookkeeping patches a child whose content is as the policy wants but whose bookkeeping
// is not (decide.UpdateBookkeeping): its metadata alone, never the child itself.
func (cw *childWriter) patchBookkeeping(ctx context.Context, parent *unstructured.Unstructured, s decide.Step) (*unstructured.Unstructured, error) {
	if err := cw.states.allowWrite(parent, s.Child, s.Observed, cw.deps.Clock.Now()); err != nil {
		return nil, err
	}
	got, err := cw.deps.Writer.PatchMetadata(ctx, s.Child.Resource.GVR, s.Observed, s.Bookkeeping.Patch())
	if err != nil {
		return nil, applyError("patch the bookkeeping of", s.Observed, err)
	}
	cw.states.wroteChild(parent, s.Child, true, cw.deps.Clock.Now())
	klog.FromContext(ctx).V(2).Info("Updated the bookkeeping of child", "child", klog.KObj(s.Observed), "kind", s.Observed.GetKind(), "patch", s.Bookkeeping) // a fmt.Stringer: spelt out only when logged
	return got, nil
}

// written is what a sync wrote of its children.
type written struct {
	// deferred is how long until the parent may send the bookkeeping patches this sync left out
	// (BookkeepingPace); 0 when it left out none
	deferred        time.Duration
	writes, deletes int
	// recreating are the children (render.Identity) whose Recreate waits for the old one to go
	recreating []string
	// objects are the children created or updated, as the API server returned them
	objects []*unstructured.Unstructured
	// holding is the child being deleted that holds up the deletion of others (of several, the
	// one deleted first; firstDeleted), or nil
	holding *unstructured.Unstructured
}

// add adds the writes of another wave of the same sync.
func (w *written) add(o written) {
	w.deferred = max(w.deferred, o.deferred)
	w.writes += o.writes
	w.deletes += o.deletes
	w.recreating = append(w.recreating, o.recreating...)
	w.objects = append(w.objects, o.objects...)
	if o.holding != nil {
		w.holding = firstDeleted(w.holding, o.holding)
	}
}

// waitFor records a child whose Recreate waits for the old one to go.
func (w *written) waitFor(child *render.Child) {
	w.recreating = append(w.recreating, render.Identity(child.Object))
}

// applyChild writes one child that is missing or differs: recreated, created or updated, unless
// the API server refused this very object before, or metacel is in a fight over it. It returns
// the child as the API server stored it, or, for a recreation whose old child is still going,
// nil and waiting.
func (cw *childWriter) applyChild(ctx context.Context, parent *unstructured.Unstructured, child *render.Child, obs *unstructured.Unstructured) (got *unstructured.Unstructured, waiting bool, err error) {
	if err := cw.states.allowWrite(parent, child, obs, cw.deps.Clock.Now()); err != nil {
		return nil, false, err
	}
	if obs != nil && child.Resource.Method == policy.Recreate {
		return cw.recreateChild(ctx, parent, child, obs)
	}
	got, err = cw.createOrUpdate(ctx, parent, child, obs)
	return got, false, err
}

// createOrUpdate creates a missing child, or applies one that differs.
func (cw *childWriter) createOrUpdate(ctx context.Context, parent *unstructured.Unstructured, child *render.Child, obs *unstructured.Unstructured) (*unstructured.Unstructured, error) {
	var got *unstructured.Unstructured
	created := false // a new object: one of its name was not there
	err := cw.writeUnlessRefused(parent, child, func() (err error) {
		if obs == nil {
			got, created, err = cw.create(ctx, parent, child)
		} else {
			got, err = cw.update(ctx, child, obs)
		}
		return err
	})
	if err == nil {
		cw.states.wroteChild(parent, child, obs != nil || created, cw.deps.Clock.Now())
	}
	return got, err
}

// create creates a child that is not in the cache (POST: one request, no read before it). An
// object of its name that exists already is read then: metacel's own is applied, anyone else's
// is a conflict, never a takeover. When the parent already reports a conflict (its Synced
// condition, written by a sync before this one, or before a restart), the name is read first:
// a conflict that is still there costs a read, not a write, each time it is retried. A child
// that this controller created lately, which the cache read by this sync did not show yet
// (recentcreates.go), is taken as its create returned it, with no request.
func (cw *childWriter) create(ctx context.Context, parent *unstructured.Unstructured, child *render.Child) (got *unstructured.Unstructured, created bool, err error) {
	if known := cw.createdLately(parent, child); known != nil {
		got, err = cw.takeExisting(ctx, parent, child, known)
		return got, false, err
	}
	if conflictReported(parent) {
		existing, err := cw.deps.Writer.Get(ctx, child.Resource.GVR, child.Object.GetNamespace(), child.Object.GetName())
		switch {
		case err == nil:
			got, err = cw.takeExisting(ctx, parent, child, existing)
			return got, false, err
		case !apierrors.IsNotFound(err):
			return nil, false, applyError("read", child.Object, err)
		}
	}
	got, err = cw.deps.Writer.Create(ctx, child.Resource.GVR, child.Object)
	if apierrors.IsAlreadyExists(err) {
		got, err = cw.readAndTakeExisting(ctx, parent, child)
		return got, false, err
	}
	if err != nil {
		return nil, false, applyError("create", child.Object, err)
	}
	cw.rememberCreated(ctx, child, got)
	cw.childEvent(parent, child.Object, "Created", "Create", "Created %s %s")
	klog.FromContext(ctx).V(2).Info("Created child", "child", klog.KObj(child.Object), "kind", child.Object.GetKind())
	return got, true, nil
}

// conflictReported reports whether the parent's Synced condition says ChildConflict.
func conflictReported(parent *unstructured.Unstructured) bool {
	conds, _, _ := unstructured.NestedSlice(parent.Object, "status", "conditions")
	for _, c := range conds {
		if m, ok := c.(map[string]any); ok && m["type"] == contract.ConditionSynced {
			return m["reason"] == contract.ReasonChildConflict
		}
	}
	return false
}

// readAndTakeExisting reads the object whose name a create found taken, and takes it as
// takeExisting says.
func (cw *childWriter) readAndTakeExisting(ctx context.Context, parent *unstructured.Unstructured, child *render.Child) (*unstructured.Unstructured, error) {
	existing, err := cw.deps.Writer.Get(ctx, child.Resource.GVR, child.Object.GetNamespace(), child.Object.GetName())
	switch {
	case apierrors.IsNotFound(err):
		return nil, applyError("create", child.Object, err) // gone meanwhile: the next sync creates it
	case err != nil:
		return nil, applyError("read", child.Object, err)
	}
	return cw.takeExisting(ctx, parent, child, existing)
}

// takeExisting handles a child that exists although the cache does not have it: metacel's own
// (the cache had not seen it yet, or someone removed its labels) is written as a child in the
// cache would be: not at all when it is up to date, else recreated or applied as its resource's
// update method says. Anyone else's is a conflict, never taken over.
func (cw *childWriter) takeExisting(ctx context.Context, parent *unstructured.Unstructured, child *render.Child, existing *unstructured.Unstructured) (*unstructured.Unstructured, error) {
	if !childOf(existing, parent, cw.policy, child.ID) {
		return nil, conflictError(parent, child, cw.policy)
	}
	s, write := decide.StepFor(child, existing)
	switch {
	case !write:
		return existing, nil // typically created by this parent's previous sync, not yet in the cache
	case s.Action == decide.Await:
		return nil, nil // being deleted: the sync its deletion causes creates it anew
	case s.Action == decide.UpdateBookkeeping:
		return cw.patchBookkeeping(ctx, parent, s)
	case s.Action == decide.Refuse:
		return nil, &syncError{reason: contract.ReasonApplyFailed, terminal: true, err: errors.New(s.Why)}
	case s.Action == decide.Recreate:
		got, _, err := cw.recreateChild(ctx, parent, child, existing)
		return got, err
	}
	return cw.update(ctx, child, existing)
}

// conflictError is a ChildConflict: an object someone else owns holds the child's name.
func conflictError(parent *unstructured.Unstructured, child *render.Child, policyName string) error {
	return &syncError{reason: contract.ReasonChildConflict, err: fmt.Errorf(
		"%s %s already exists and is not managed by this %s (metacel did not apply it, or applied it for another parent): delete or rename it, or change the child's name in policy %q",
		child.Object.GetKind(), klog.KObj(child.Object), parent.GetKind(), policyName)}
}

// childOf reports whether an existing object of the name of the desired child id is the child of
// parent, which a create that found the name taken may take over (render.Kinship). metacel must
// have applied it (its managed fields say so: labels alone are anyone's to set, and never make an
// object metacel's to take over); then its marks say whose it is: its parent-uid label; or, when
// someone removed that label (the object then left the cache), its controller ownerReference, or,
// for a child without one (cross-namespace), metacel's other labels naming the policy and the
// child. The apply that follows restores the label. Its resource, namespace and record are not
// asked: it is where the render placed the desired child, whom metacel applies and records.
func childOf(obj, parent *unstructured.Unstructured, policyName, id string) bool {
	kin := render.Kinship{Policy: policyName, Parent: parent}
	return kin.Judge(obj, render.Facts{Applied: render.AppliedAsManagedFieldsSay, ChildID: id}).Child()
}

// update applies a child whose managed fields differ (server-side apply, forced: drift is
// reverted). A child metacel created and never applied first has its fields moved to metacel's
// Apply entry (apply.Writer.Apply).
func (cw *childWriter) update(ctx context.Context, child *render.Child, obs *unstructured.Unstructured) (*unstructured.Unstructured, error) {
	got, err := cw.deps.Writer.Apply(ctx, child.Resource.GVR, child.Object, obs)
	if err != nil {
		return nil, applyError("apply", child.Object, err)
	}
	klog.FromContext(ctx).V(2).Info("Updated child", "child", klog.KObj(child.Object), "kind", child.Object.GetKind())
	return got, nil
}

// recreateChild deletes a child that differs from its desired state and, when it is gone at once,
// creates it anew in the same sync; it returns the new child, or waiting when the old one is
// still going (deleted now, or before): the sync its deletion causes creates the new one.
func (cw *childWriter) recreateChild(ctx context.Context, parent *unstructured.Unstructured, child *render.Child, obs *unstructured.Unstructured) (got *unstructured.Unstructured, waiting bool, err error) {
	if gone, err := cw.recreate(ctx, parent, child, obs); err != nil || !gone {
		return nil, err == nil, err
	}
	got, err = cw.createRecreated(ctx, parent, child)
	return got, got == nil && err == nil, err
}

// recreate deletes a child that differs from its desired state, and reports whether it is gone
// at once (goneAtOnce); else its deletion re-syncs the parent, which then creates it anew.
func (cw *childWriter) recreate(ctx context.Context, parent *unstructured.Unstructured, child *render.Child, obs *unstructured.Unstructured) (gone bool, err error) {
	if obs.GetDeletionTimestamp() != nil {
		return false, nil // already on its way out
	}
	if err := cw.deps.Writer.Delete(ctx, child.Resource.GVR, obs); err != nil {
		return false, applyError("delete (to recreate)", obs, err)
	}
	cw.states.deletedToRecreate(parent, child, cw.deps.Clock.Now())
	cw.childEvent(parent, obs, "Recreating", "Delete", "Deleted %s %s to recreate it with its new spec")
	klog.FromContext(ctx).V(2).Info("Deleted child to recreate it", "child", klog.KObj(obs), "kind", obs.GetKind())
	return goneAtOnce(obs), nil
}

// goneAtOnce reports whether the API server removes an object as soon as it is deleted (what it
// reads of a child, the caches keep: policy.runtimeReads): nothing
// holds it (no finalizer) and it gets no grace period, which only a Pod bound to a node gets.
func goneAtOnce(obj *unstructured.Unstructured) bool {
	if len(obj.GetFinalizers()) > 0 {
		return false
	}
	node, _, _ := unstructured.NestedString(obj.Object, "spec", "nodeName")
	return obj.GetAPIVersion() != "v1" || obj.GetKind() != "Pod" || node == ""
}

// createRecreated creates a child deleted in this sync to be recreated. When its name is still
// taken (the deletion took longer than goneAtOnce said), the deletion's event re-syncs the parent,
// which creates it then.
func (cw *childWriter) createRecreated(ctx context.Context, parent *unstructured.Unstructured, child *render.Child) (*unstructured.Unstructured, error) {
	var got *unstructured.Unstructured
	err := cw.writeUnlessRefused(parent, child, func() (err error) {
		got, err = cw.deps.Writer.Create(ctx, child.Resource.GVR, child.Object)
		return err
	})
	switch {
	case apierrors.IsAlreadyExists(err):
		return nil, nil
	case err != nil:
		return nil, applyError("create (to recreate)", child.Object, err)
	}
	cw.rememberCreated(ctx, child, got)
	cw.states.wroteChild(parent, child, false, cw.deps.Clock.Now()) // what a drift of it reverts
	cw.childEvent(parent, child.Object, "Created", "Create", "Created %s %s")
	return got, nil
}

// remove deletes a child, or releases it, as its step says (decide.Delete, decide.Release).
func (cw *childWriter) remove(ctx context.Context, parent *unstructured.Unstructured, s decide.Step) error {
	res, ok := cw.resourceOf(s.Observed)
	if !ok {
		return nil
	}
	dp := policy.DeletionDelete
	if s.Action == decide.Release {
		dp = policy.DeletionOrphan
	}
	var opts []apply.DeleteOption
	if s.Foreground {
		opts = append(opts, apply.Foreground)
	}
	return cw.removeChild(ctx, parent, res.GVR, dp, s.Observed, opts...)
}

// removeChild deletes a child, or releases it (metacel's labels and ownerReference removed) when
// its entry's deletionPolicy is Orphan, else deleted with opts. parent, when known, gets the event.
func (cw *childWriter) removeChild(ctx context.Context, parent *unstructured.Unstructured, gvr schema.GroupVersionResource, dp policy.DeletionPolicy, obs *unstructured.Unstructured, opts ...apply.DeleteOption) error {
	if dp == policy.DeletionOrphan {
		annotations := []string{contract.AnnotationDeletionPolicy}
		if err := cw.deps.Writer.Release(ctx, gvr, obs, contract.ChildLabels, annotations, types.UID(obs.GetLabels()[contract.LabelParentUID])); err != nil {
			return applyError("release", obs, err)
		}
		cw.childEvent(parent, obs, "Orphaned", "Release", "Released %s %s (deletionPolicy: Orphan)")
		return nil
	}
	if err := cw.deps.Writer.Delete(ctx, gvr, obs, opts...); err != nil {
		return applyError("delete", obs, err)
	}
	cw.childEvent(parent, obs, "Deleted", "Delete", "Deleted %s %s, no longer desired")
	return nil
}

// childEvent records a Normal event about a child on its parent, when the parent is known;
// format takes the child's kind and namespaced name.
func (cw *childWriter) childEvent(parent, child *unstructured.Unstructured, reason, action, format string) {
	if parent != nil {
		cw.deps.Recorder.Eventf(parent, child, "Normal", reason, action, format, child.GetKind(), klog.KObj(child))
	}
}

// resourceOf finds the child resource of an observed object.
func (cw *childWriter) resourceOf(obj *unstructured.Unstructured) (policy.ChildResourceInfo, bool) {
	return resourceOf(cw.resources, obj)
}

// resourceOf finds, among a policy's child resources, the one of an observed object.
func resourceOf(resources map[schema.GroupVersionResource]policy.ChildResourceInfo, obj *unstructured.Unstructured) (policy.ChildResourceInfo, bool) {
	gvk := obj.GroupVersionKind()
	for gvr, res := range resources {
		if gvr.Group == gvk.Group && res.Kind == gvk.Kind {
			return res, true
		}
	}
	return policy.ChildResourceInfo{}, false
}

func applyError(verb string, obj *unstructured.Unstructured, err error) error {
	format := "%s %s %s: %w"
	if isTooLarge(err) {
		format += ": the object is larger than the API server can store (etcd's request limit, 1.5 MiB by default): make it smaller, e.g. split its content over several children"
	}
	return &syncError{reason: contract.ReasonApplyFailed,
		err: fmt.Errorf(format, verb, obj.GetKind(), klog.KObj(obj), err)}
}

// rememberCreated remembers a child the controller created, as the create returned it, held as
// its cache holds it (a burst of creates remembers thousands for a while).
func (cw *childWriter) rememberCreated(ctx context.Context, child *render.Child, got *unstructured.Unstructured) {
	rc := cw.caches.children[child.Resource.GVR.String()]
	if rc == nil || got == nil {
		return
	}
	held, err := compact.AsCached(got, rc.Keep())
	if err != nil {
		// a sync before the cache has the child sends the create again, answered 409
		klog.FromContext(ctx).Error(err, "Cannot remember the child created", "child", klog.KObj(got))
		return
	}
	rc.creates.add(held, cw.deps.Clock.Now())
}

// createdLately returns the child that the controller created lately for the parent, or nil:
// the object of its name the cache holds, when it does (delivered since the sync read its
// children; or edited so that it is not indexed as the parent's any more, its parent-uid label
// removed, say: newer than what the create returned, which would look up to date), else as the
// create returned it. Either must say it is the parent's child, as takeExisting asks of an object
// it takes.
func (cw *childWriter) createdLately(parent *unstructured.Unstructured, child *render.Child) *unstructured.Unstructured {
	rc := cw.caches.children[child.Resource.GVR.String()]
	if rc == nil {
		return nil
	}
	if obj, cached, _ := rc.GetByKey(child.Object.GetNamespace() + "/" + child.Object.GetName()); cached {
		u, err := compact.Unstructured(obj)
		if err != nil || !childOf(u, parent, cw.policy, child.ID) {
			return nil
		}
		return u
	}
	known := rc.creates.lookup(child.Object.GetNamespace(), child.Object.GetName(), string(parent.GetUID()), cw.deps.Clock.Now())
	if known == nil || !childOf(known, parent, cw.policy, child.ID) {
		return nil
	}
	return known
}

// writeUnlessRefused calls write for a child, unless the API server refused this very object
// before: then it returns that refusal again without a request. A refusal is remembered; a
// write that goes through forgets the child's.
func (cw *childWriter) writeUnlessRefused(parent *unstructured.Unstructured, child *render.Child, write func() error) error {
	return cw.states.sendUnlessRefused(parent, render.Identity(child.Object), child.Object, write)
}

// finishes reports whether a sync takes a step: always, but for a removed policy's controller,
// which only completes the Recreates under way (their children awaited, created, or, when the
// cache does not show them going yet, deleted again: the same deletion).
func (cw *childWriter) finishes(parent *unstructured.Unstructured, s decide.Step) bool {
	if !cw.draining.Load() {
		return true
	}
	switch s.Action {
	case decide.Await, decide.Create, decide.Recreate:
		return cw.states.isRecreating(parentKey(parent), render.Identity(s.Child.Object))
	}
	return false
}
