package controller

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"

	"metacel.dev/metacel/runtime/apply"
	"metacel.dev/metacel/runtime/contract"
	"metacel.dev/metacel/runtime/decide"
	"metacel.dev/metacel/runtime/policy"
	"metacel.dev/metacel/runtime/render"
)

// write carries out a sync's steps (decide.Writes) in order: children created, applied,
// recreated, then those no longer desired deleted or released. A child that already matches has
// no step and costs no write. It says what it wrote: how many writes, and the children as the API
// server returned them.
func (c *Controller) write(ctx context.Context, parent *unstructured.Unstructured, steps []decide.Step) (written, error) {
	var w written
	steps, w.deferred = c.paceBookkeeping(parent, steps)
	for _, s := range steps {
		if err := c.take(ctx, parent, s, &w); err != nil {
			return w, err
		}
	}
	return w, nil
}

// take carries out one step of a sync, and adds what it wrote to w.
func (c *Controller) take(ctx context.Context, parent *unstructured.Unstructured, s decide.Step, w *written) error {
	if !c.finishes(parent, s) {
		return nil // the policy was removed: only Recreates under way complete (recreatesunderway.go)
	}
	switch s.Action {
	case decide.Await:
		w.waitFor(s.Child) // created once it is gone, by the sync its deletion causes
		return nil
	case decide.Delete, decide.Release:
		w.deletes++
		return c.remove(ctx, parent, s)
	case decide.Conflict:
		return conflictError(parent, s.Child, c.Name())
	case decide.Refuse: // the API server would refuse the update: no request
		return &syncError{reason: contract.ReasonApplyFailed, err: errors.New(s.Why)}
	case decide.UpdateBookkeeping:
		got, err := c.patchBookkeeping(ctx, parent, s)
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
	got, waiting, err := c.applyChild(ctx, parent, s.Child, s.Observed)
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
func (c *Controller) paceBookkeeping(parent *unstructured.Unstructured, steps []decide.Step) ([]decide.Step, time.Duration) {
	n := 0
	for _, s := range steps {
		if s.Action == decide.UpdateBookkeeping {
			n++
		}
	}
	if ok, wait := c.deps.Pace.admit(c.Name()+"/"+parentKey(parent), n, c.deps.Clock.Now()); !ok {
		return slices.DeleteFunc(slices.Clone(steps), func(s decide.Step) bool { return s.Action == decide.UpdateBookkeeping }), wait
	}
	return steps, 0
}

// patchBookkeeping patches a child whose content is as the policy wants but whose bookkeeping
// is not (decide.UpdateBookkeeping): its metadata alone, never the child itself.
func (c *Controller) patchBookkeeping(ctx context.Context, parent *unstructured.Unstructured, s decide.Step) (*unstructured.Unstructured, error) {
	if err := c.parentStates.allowWrite(parent, s.Child, s.Observed, c.deps.Clock.Now()); err != nil {
		return nil, err
	}
	got, err := c.deps.Writer.PatchMetadata(ctx, s.Child.Resource.GVR, s.Observed, s.Bookkeeping.Patch())
	if err != nil {
		return nil, applyError("patch the bookkeeping of", s.Observed, err)
	}
	c.parentStates.wroteChild(parent, s.Child, true, c.deps.Clock.Now())
	klog.FromContext(ctx).V(2).Info("Updated the bookkeeping of child", "child", klog.KObj(s.Observed), "kind", s.Observed.GetKind(), "patch", s.Bookkeeping.String())
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
}

// waitFor records a child whose Recreate waits for the old one to go.
func (w *written) waitFor(child *render.Child) {
	w.recreating = append(w.recreating, render.Identity(child.Object))
}

// applyChild writes one child that is missing or differs: recreated, created or updated, unless
// the API server refused this very object before, or metacel is in a fight over it. It returns
// the child as the API server stored it, or, for a recreation whose old child is still going,
// nil and waiting.
func (c *Controller) applyChild(ctx context.Context, parent *unstructured.Unstructured, child *render.Child, obs *unstructured.Unstructured) (got *unstructured.Unstructured, waiting bool, err error) {
	if err := c.parentStates.allowWrite(parent, child, obs, c.deps.Clock.Now()); err != nil {
		return nil, false, err
	}
	if obs != nil && child.Resource.Method == policy.Recreate {
		return c.recreateChild(ctx, parent, child, obs)
	}
	got, err = c.createOrUpdate(ctx, parent, child, obs)
	return got, false, err
}

// createOrUpdate creates a missing child, or applies one that differs.
func (c *Controller) createOrUpdate(ctx context.Context, parent *unstructured.Unstructured, child *render.Child, obs *unstructured.Unstructured) (*unstructured.Unstructured, error) {
	var got *unstructured.Unstructured
	created := false // a new object: one of its name was not there
	err := c.writeUnlessRefused(parent, child, func() (err error) {
		if obs == nil {
			got, created, err = c.create(ctx, parent, child)
		} else {
			got, err = c.update(ctx, child, obs)
		}
		return err
	})
	if err == nil {
		c.parentStates.wroteChild(parent, child, obs != nil || created, c.deps.Clock.Now())
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
func (c *Controller) create(ctx context.Context, parent *unstructured.Unstructured, child *render.Child) (got *unstructured.Unstructured, created bool, err error) {
	if known := c.createdLately(parent, child); known != nil {
		got, err = c.takeExisting(ctx, parent, child, known)
		return got, false, err
	}
	if conflictReported(parent) {
		existing, err := c.deps.Writer.Get(ctx, child.Resource.GVR, child.Object.GetNamespace(), child.Object.GetName())
		switch {
		case err == nil:
			got, err = c.takeExisting(ctx, parent, child, existing)
			return got, false, err
		case !apierrors.IsNotFound(err):
			return nil, false, applyError("read", child.Object, err)
		}
	}
	got, err = c.deps.Writer.Create(ctx, child.Resource.GVR, child.Object)
	if apierrors.IsAlreadyExists(err) {
		got, err = c.readAndTakeExisting(ctx, parent, child)
		return got, false, err
	}
	if err != nil {
		return nil, false, applyError("create", child.Object, err)
	}
	c.rememberCreated(child, got)
	c.childEvent(parent, child.Object, "Created", "Create", "Created %s %s")
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
func (c *Controller) readAndTakeExisting(ctx context.Context, parent *unstructured.Unstructured, child *render.Child) (*unstructured.Unstructured, error) {
	existing, err := c.deps.Writer.Get(ctx, child.Resource.GVR, child.Object.GetNamespace(), child.Object.GetName())
	switch {
	case apierrors.IsNotFound(err):
		return nil, applyError("create", child.Object, err) // gone meanwhile: the next sync creates it
	case err != nil:
		return nil, applyError("read", child.Object, err)
	}
	return c.takeExisting(ctx, parent, child, existing)
}

// takeExisting handles a child that exists although the cache does not have it: metacel's own
// (the cache had not seen it yet, or someone removed its labels) is written as a child in the
// cache would be: not at all when it is up to date, else recreated or applied as its resource's
// update method says. Anyone else's is a conflict, never taken over.
func (c *Controller) takeExisting(ctx context.Context, parent *unstructured.Unstructured, child *render.Child, existing *unstructured.Unstructured) (*unstructured.Unstructured, error) {
	if !childOf(existing, parent, c.Name(), child.ID) {
		return nil, conflictError(parent, child, c.Name())
	}
	s, write := decide.StepFor(child, existing)
	switch {
	case !write:
		return existing, nil // typically created by this parent's previous sync, not yet in the cache
	case s.Action == decide.Await:
		return nil, nil // being deleted: the sync its deletion causes creates it anew
	case s.Action == decide.UpdateBookkeeping:
		return c.patchBookkeeping(ctx, parent, s)
	case s.Action == decide.Refuse:
		return nil, &syncError{reason: contract.ReasonApplyFailed, err: errors.New(s.Why)}
	case s.Action == decide.Recreate:
		got, _, err := c.recreateChild(ctx, parent, child, existing)
		return got, err
	}
	return c.update(ctx, child, existing)
}

// conflictError is a ChildConflict: an object someone else owns holds the child's name.
func conflictError(parent *unstructured.Unstructured, child *render.Child, policyName string) error {
	return &syncError{reason: contract.ReasonChildConflict, retry: true, err: fmt.Errorf(
		"%s %s already exists and is not managed by this %s (metacel did not apply it, or applied it for another parent): delete or rename it, or change the child's name in policy %q",
		child.Object.GetKind(), render.NamespacedName(child.Object), parent.GetKind(), policyName)}
}

// childOf reports whether an existing object is the child of parent. metacel must have applied
// it (its managed fields say so: labels alone are anyone's to set, and never make an object
// metacel's to take over); then its parent-uid label says whose it is; or, when someone removed
// that label (the object then left the cache), its controller ownerReference does, or, for a
// child without one (cross-namespace), metacel's other labels do. The apply that follows
// restores the label.
func childOf(obj, parent *unstructured.Unstructured, policyName, id string) bool {
	if !apply.AppliedBy(obj) {
		return false
	}
	switch uid := obj.GetLabels()[contract.LabelParentUID]; uid {
	case string(parent.GetUID()):
		return true
	case "":
		if ref := metav1.GetControllerOfNoCopy(obj); ref != nil {
			return ref.UID == parent.GetUID()
		}
		l := obj.GetLabels()
		return l[contract.LabelChildPolicy] == policyName && l[contract.LabelChildID] == id
	}
	return false
}

// update applies a child whose managed fields differ (server-side apply, forced: drift is
// reverted). A child metacel created and never applied first has its fields moved to metacel's
// Apply entry.
func (c *Controller) update(ctx context.Context, child *render.Child, obs *unstructured.Unstructured) (*unstructured.Unstructured, error) {
	if apply.CreatedNotApplied(obs) {
		if err := c.deps.Writer.UpgradeToApply(ctx, child.Resource.GVR, obs); err != nil {
			return nil, applyError("take over the fields it created of", child.Object, err)
		}
	}
	got, err := c.deps.Writer.Apply(ctx, child.Resource.GVR, child.Object)
	if err != nil {
		return nil, applyError("apply", child.Object, err)
	}
	klog.FromContext(ctx).V(2).Info("Updated child", "child", klog.KObj(child.Object), "kind", child.Object.GetKind())
	return got, nil
}

// recreateChild deletes a child that differs from its desired state and, when it is gone at once,
// creates it anew in the same sync; it returns the new child, or waiting when the old one is
// still going (deleted now, or before): the sync its deletion causes creates the new one.
func (c *Controller) recreateChild(ctx context.Context, parent *unstructured.Unstructured, child *render.Child, obs *unstructured.Unstructured) (got *unstructured.Unstructured, waiting bool, err error) {
	if gone, err := c.recreate(ctx, parent, child, obs); err != nil || !gone {
		return nil, err == nil, err
	}
	got, err = c.createRecreated(ctx, parent, child)
	return got, got == nil && err == nil, err
}

// recreate deletes a child that differs from its desired state, and reports whether it is gone
// at once (goneAtOnce); else its deletion re-syncs the parent, which then creates it anew.
func (c *Controller) recreate(ctx context.Context, parent *unstructured.Unstructured, child *render.Child, obs *unstructured.Unstructured) (gone bool, err error) {
	if obs.GetDeletionTimestamp() != nil {
		return false, nil // already on its way out
	}
	if err := c.deps.Writer.Delete(ctx, child.Resource.GVR, obs); err != nil {
		return false, applyError("delete (to recreate)", obs, err)
	}
	c.parentStates.deletedToRecreate(parent, child, c.deps.Clock.Now())
	c.childEvent(parent, obs, "Recreating", "Delete", "Deleted %s %s to recreate it with its new spec")
	klog.FromContext(ctx).V(2).Info("Deleted child to recreate it", "child", klog.KObj(obs), "kind", obs.GetKind())
	return goneAtOnce(obs), nil
}

// goneAtOnce reports whether the API server removes an object as soon as it is deleted: nothing
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
func (c *Controller) createRecreated(ctx context.Context, parent *unstructured.Unstructured, child *render.Child) (*unstructured.Unstructured, error) {
	var got *unstructured.Unstructured
	err := c.writeUnlessRefused(parent, child, func() (err error) {
		got, err = c.deps.Writer.Create(ctx, child.Resource.GVR, child.Object)
		return err
	})
	switch {
	case apierrors.IsAlreadyExists(err):
		return nil, nil
	case err != nil:
		return nil, applyError("create (to recreate)", child.Object, err)
	}
	c.rememberCreated(child, got)
	c.parentStates.wroteChild(parent, child, false, c.deps.Clock.Now()) // what a drift of it reverts
	c.childEvent(parent, child.Object, "Created", "Create", "Created %s %s")
	return got, nil
}

// remove deletes a child, or releases it, as its step says (decide.Delete, decide.Release).
func (c *Controller) remove(ctx context.Context, parent *unstructured.Unstructured, s decide.Step) error {
	res, ok := c.resourceOf(s.Observed)
	if !ok {
		return nil
	}
	dp := policy.DeletionDelete
	if s.Action == decide.Release {
		dp = policy.DeletionOrphan
	}
	return c.removeChild(ctx, parent, res.GVR, dp, s.Observed)
}

// removeChild deletes a child, or releases it (metacel's labels and ownerReference removed) when
// its entry's deletionPolicy is Orphan. parent, when known, gets the event.
func (c *Controller) removeChild(ctx context.Context, parent *unstructured.Unstructured, gvr schema.GroupVersionResource, dp policy.DeletionPolicy, obs *unstructured.Unstructured) error {
	if dp == policy.DeletionOrphan {
		annotations := []string{contract.AnnotationDeletionPolicy}
		if err := c.deps.Writer.Release(ctx, gvr, obs, contract.ChildLabels, annotations, types.UID(obs.GetLabels()[contract.LabelParentUID])); err != nil {
			return applyError("release", obs, err)
		}
		c.childEvent(parent, obs, "Orphaned", "Release", "Released %s %s (deletionPolicy: Orphan)")
		return nil
	}
	if err := c.deps.Writer.Delete(ctx, gvr, obs); err != nil {
		return applyError("delete", obs, err)
	}
	c.childEvent(parent, obs, "Deleted", "Delete", "Deleted %s %s, no longer desired")
	return nil
}

// childEvent records a Normal event about a child on its parent, when the parent is known;
// format takes the child's kind and namespaced name.
func (c *Controller) childEvent(parent, child *unstructured.Unstructured, reason, action, format string) {
	if parent != nil {
		c.deps.Recorder.Eventf(parent, child, "Normal", reason, action, format, child.GetKind(), render.NamespacedName(child))
	}
}

// resourceOf finds the child resource of an observed object.
func (c *Controller) resourceOf(obj *unstructured.Unstructured) (policy.ChildResourceInfo, bool) {
	gvk := obj.GroupVersionKind()
	for gvr, res := range c.policy.ChildResources {
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
	return &syncError{reason: contract.ReasonApplyFailed, retry: !isPermanent(err),
		err: fmt.Errorf(format, verb, obj.GetKind(), render.NamespacedName(obj), err)}
}
