package controller

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"

	"metacel.dev/metacel/runtime/clusterread"
	"metacel.dev/metacel/runtime/contract"
	"metacel.dev/metacel/runtime/decide"
	"metacel.dev/metacel/runtime/policy"
	"metacel.dev/metacel/runtime/render"
)

// cleanup removes what a policy's children leave behind that no sync would see again. It holds
// the cleanup finalizer (contract.Finalizer) on a parent with children that garbage collection does
// not remove with it (cross-namespace, cluster-scoped and Orphan ones), or whose children have an
// order (decide.Ordered: garbage collection would delete them in none), keeps the parent's record
// of those children, and, when the parent is deleted, deletes or releases them, in the reverse of
// the order they are applied in, and lets the parent go (finalize.go); it lets go of parents that left the policy's labelSelector
// (leftwithfinalizer.go); it removes the children of resources the policy no longer lists
// (droppedresources.go). What it removes is read from the API server's objects, the parent's
// record and the ledger, never only remembered.
type cleanup struct {
	policy *policy.Compiled
	// previous is the version of the policy the controller replaces (nil: none), whose entries
	// say the deletion policy of a child that does not record its own
	previous func() *policy.Compiled
	deps     *Deps
	writer   *childWriter
	reporter *reporter
	// ordered: the policy's children have an order (decide.Ordered), computed once
	ordered bool
	// children returns the parent's children the caches hold, by child id
	children func(ctx context.Context, uid types.UID) map[string][]*unstructured.Unstructured
	// namespaceLabels gives the labels of a namespace, for the policy's consent labels
	namespaceLabels render.NamespaceLabels
	// caches are the controller's, share the parents it syncs, selector the policy's parents
	// (set by Watch)
	caches   *caches
	share    *share
	selector *labels.Selector
	// requeueAfter syncs a parent again after a while
	requeueAfter func(key string, d time.Duration)
	// left are the parents that left the cache with the cleanup finalizer
	left parentsLeftWithFinalizer
	// dropped is true while children of resources the policy no longer lists remain
	dropped atomic.Bool
}

// ensureFinalizer makes sure a parent with children it does not own (cross-namespace or
// cluster-scoped ones, to delete; Orphan ones, to release), or with children that have an order
// (to delete them in reverse), carries the cleanup finalizer before they are created, and drops
// it once it has none left. Its children are those of kids, the
// render's sort of what the sync observed; the objects it found foreign that carry the parent's
// labels (out of its reach, or not in its record) are reported, and make no finalizer.
func (f *cleanup) ensureFinalizer(ctx context.Context, parent *unstructured.Unstructured, out *render.Output, kids *render.ObservedChildren) error {
	need := f.ordered && (len(out.Children) > 0 || len(kids.ByID) > 0 || len(kids.Undesired) > 0)
	for _, ch := range out.Children {
		need = need || !ch.Owned
	}
	for _, o := range allObjects(kids.ByID) {
		need = need || !render.HasOwnerReference(o, parent)
	}
	for _, o := range kids.Undesired {
		need = need || !render.HasOwnerReference(o, parent)
	}
	for _, fo := range kids.Foreign {
		if fo.Reason != "" {
			f.ignoreForeign(ctx, parent, fo.Object, fo.Reason, fo.Why)
		}
	}
	has := slices.Contains(parent.GetFinalizers(), contract.Finalizer)
	if need == has {
		return nil
	}
	written, err := f.deps.Writer.SetFinalizer(ctx, f.policy.Parent.GVR, parent, contract.Finalizer, need)
	if err != nil {
		return applyError("update finalizers of", parent, err)
	}
	// the sync's parent as the API server now holds it: a later wave of the sync does not send the
	// patch again, with the resourceVersion this one changed (409 Conflict)
	parent.SetFinalizers(written.Finalizers)
	parent.SetResourceVersion(written.ResourceVersion)
	return nil
}

// recordChildren writes on the parent the record of its children that garbage collection does
// not remove with it (render.ChildRecord), when it changed: those the sync found (kids) and those
// it wrote (objects, as the API server returned them). A child deleted stays recorded until it
// is gone, so that the finalizer waits for it.
func (f *cleanup) recordChildren(ctx context.Context, parent *unstructured.Unstructured, kids *render.ObservedChildren, objects []*unstructured.Unstructured) error {
	all := append(append(allObjects(kids.ByID), kids.Undesired...), objects...)
	value, changed := render.RecordOf(parent, true).Renewed(all)
	if !changed {
		return nil
	}
	if err := f.deps.Writer.SetAnnotation(ctx, f.policy.Parent.GVR, parent, contract.AnnotationChildren, value); err != nil {
		return applyError("record the children of", parent, err)
	}
	return nil
}

// finalize cleans up a deleted parent's children that garbage collection cannot reach (those
// without an ownerReference), and, when its children have an order, all of them, in the reverse
// of that order (decide.Removals), then removes the finalizer. Their deletions re-sync the
// parent, so it is finalized once they are gone; while a child being deleted holds the others up,
// it is synced again at the deletion deadline, past which its status says so (holdUp).
func (f *cleanup) finalize(ctx context.Context, parent *unstructured.Unstructured) error {
	if !slices.Contains(parent.GetFinalizers(), contract.Finalizer) {
		return nil
	}
	kin := f.kinshipOf(ctx, parent)
	remaining, holding, err := f.cleanUp(ctx, kin, parent, allObjects(f.children(ctx, parent.GetUID())))
	if err == nil && remaining == 0 {
		// a child the cache had not seen yet: it is being deleted, and re-syncs the parent
		remaining, holding, err = f.childrenLive(ctx, parent, kin)
	}
	switch {
	case err != nil:
		return err
	case holding != nil:
		return f.holdUp(ctx, parent, holding)
	case remaining > 0:
		return nil
	}
	if _, err := f.deps.Writer.SetFinalizer(ctx, f.policy.Parent.GVR, parent, contract.Finalizer, false); err != nil {
		return applyError("remove the finalizer of", parent, err)
	}
	return nil
}

// cleansUp reports whether the parent's finalizer cleans up obj, an object that carries the
// parent's labels: whether it is the parent's child (render.Kinship) by its managed fields
// (metacel applied it: an object made by hand that merely carries the labels is not metacel's),
// undesired (a deleted parent desires nothing, so its record must name it) and out of garbage
// collection's reach (kinshipOf). Labels and the field manager's name are anyone's to write: an
// object elsewhere, or one metacel did not write for the parent, is no child of it; cleaning it
// up would let anyone pin a parent (and its namespace) in Terminating with an object of their
// own. Such an object carrying the parent's labels is reported (ignoreForeign).
func (f *cleanup) cleansUp(ctx context.Context, kin *render.Kinship, parent, obj *unstructured.Unstructured) bool {
	v := kin.Judge(obj, render.Facts{Applied: render.AppliedAsManagedFieldsSay, Undesired: true})
	if v.Reason != "" {
		f.ignoreForeign(ctx, parent, obj, v.Reason, v.Why)
	}
	return v.Child()
}

// ignoreForeign reports an object that carries a parent's labels but is not its child (reason,
// why): it is left alone. The event recorder folds repeats of one event into a series.
func (f *cleanup) ignoreForeign(ctx context.Context, parent, obj *unstructured.Unstructured, reason, why string) {
	klog.FromContext(ctx).V(1).Info("Ignoring an object that carries the parent's labels", "object", klog.KObj(obj), "kind", obj.GetKind(), "reason", reason, "why", why)
	f.deps.Recorder.Eventf(parent, obj, "Warning", reason, "Ignore",
		"Ignored %s %s, which carries this %s's labels: %s; metacel neither adopts, deletes nor waits for it", obj.GetKind(), klog.KObj(obj), parent.GetKind(), why)
}

// kinshipOf returns what decides which of a parent's labelled objects its finalizer cleans up,
// built once per finalize: the kinship its render judges (render.NewKinship: the namespaces its
// children may be in, its record of the children it wrote), asked only of the objects garbage
// collection does not remove with it (ExceptCollected), unless the finalizer deletes all its
// children in order (deletesInOrder).
func (f *cleanup) kinshipOf(ctx context.Context, parent *unstructured.Unstructured) *render.Kinship {
	kin := render.NewKinship(ctx, f.policy, render.Input{
		Parent: parent, Mapper: f.deps.Mapper, Namespaces: f.namespaceLabels, ReservedNamespace: f.deps.ReservedNamespace, CheckRecord: true,
	})
	kin.ExceptCollected = !f.deletesInOrder(parent)
	return kin
}

// deletesInOrder reports whether the finalizer deletes all of a deleted parent's children, owned
// ones too, in the reverse of the order they are applied in: when they have an order
// (decide.Ordered), unless the parent was deleted with propagationPolicy Orphan (its children
// are to stay).
func (f *cleanup) deletesInOrder(parent *unstructured.Unstructured) bool {
	return f.ordered && !slices.Contains(parent.GetFinalizers(), metav1.FinalizerOrphanDependents)
}

// childrenLive asks the API server, not the cache, for the parent's children the finalizer
// cleans up and removes them (cleanUp): the finalizer goes only when none is left, even one
// created just before the parent's deletion and not cached yet.
func (f *cleanup) childrenLive(ctx context.Context, parent *unstructured.Unstructured, kin *render.Kinship) (remaining int, holding *unstructured.Unstructured, err error) {
	var all []*unstructured.Unstructured
	for gvr := range f.policy.ChildResources {
		items, err := clusterread.ListChildren(ctx, f.deps.Writer.Client(), gvr, f.policy.Name(), parent.GetUID())
		if err != nil {
			return 0, nil, applyError("list the children of", parent, err)
		}
		all = append(all, items...)
	}
	return f.cleanUp(ctx, kin, parent, all)
}

// cleanUp deletes or releases those of objs, objects that carry a deleted parent's labels, that
// its finalizer cleans up (cleansUp), in the reverse of the order they are applied in
// (decide.Removals: one that another waits for is left until that one is gone). It returns how
// many there are (those already going are waited for, not removed again), and the child being
// deleted that holds up the deletion of others (of several, the one deleted first), or nil.
func (f *cleanup) cleanUp(ctx context.Context, kin *render.Kinship, parent *unstructured.Unstructured, objs []*unstructured.Unstructured) (remaining int, holding *unstructured.Unstructured, err error) {
	var children []*unstructured.Unstructured
	for _, obj := range objs {
		if f.cleansUp(ctx, kin, parent, obj) {
			children = append(children, obj)
			holding = firstDeleted(holding, obj) // a child that does not go (a finalizer no one removes) holds the parent up
		}
	}
	for _, s := range decide.Removals(children, nil, f.policy, f.previous()) {
		if s.Action == decide.Wait { // deleted once the one it waits for is gone: its deletion re-syncs the parent
			holding = firstDeleted(holding, s.Blocker)
			continue
		}
		if err := f.writer.remove(ctx, parent, s); err != nil {
			return 0, nil, err
		}
	}
	return len(children), holding, nil
}

// firstDeleted is, of a child that holds up others so far (nil: none) and the blocker of one more
// that waits, the one being deleted since first; a blocker not being deleted yet holds up nothing.
func firstDeleted(holding, blocker *unstructured.Unstructured) *unstructured.Unstructured {
	at := blocker.GetDeletionTimestamp()
	if at == nil || holding != nil && !at.Before(holding.GetDeletionTimestamp()) {
		return holding
	}
	return blocker
}

// DeletionDeadline is how long a child may be deleting while it holds up the deletion of others
// (children go in the reverse of the order they are applied in), those of a deleted parent or
// those no longer desired, or the deleted parent itself, before the parent's Ready condition says
// so (DeletionBlocked).
const DeletionDeadline = 5 * time.Minute

// holdUp handles a deleted parent whose child holding, being deleted, holds up the deletion of
// others: its deletion re-syncs the parent; until then, the parent is synced again at the
// deadline, and, past it, its Ready condition names that child and since when. Nothing is
// remembered: each sync reads the children again.
func (f *cleanup) holdUp(ctx context.Context, parent, holding *unstructured.Unstructured) error {
	since := holding.GetDeletionTimestamp().Time
	if left := DeletionDeadline - f.deps.Clock.Since(since); left > 0 {
		f.requeueAfter(parentKey(parent), left)
		return nil
	}
	msg := deletionBlockedMessage(holding)
	klog.FromContext(ctx).V(2).Info("A child being deleted holds up the deletion of the others", "child", klog.KObj(holding), "kind", holding.GetKind(), "since", since)
	_, changed, err := f.reporter.updateStatus(ctx, parent, nil, []render.Condition{
		{Type: contract.ConditionReady, Status: "False", Reason: contract.ReasonDeletionBlocked, Message: msg}})
	if changed {
		f.deps.Recorder.Eventf(parent, holding, "Warning", contract.ReasonDeletionBlocked, "Delete", "%s", msg)
	}
	return err
}

// deletionBlockedMessage says which child holds up a deletion, since when, and what holds it.
func deletionBlockedMessage(holding *unstructured.Unstructured) string {
	msg := fmt.Sprintf("the deletion waits for %s %s, being deleted since %s (longer than %s): what waits for it goes once it is gone",
		holding.GetKind(), klog.KObj(holding), holding.GetDeletionTimestamp().UTC().Format(time.RFC3339), DeletionDeadline)
	if fin := holding.GetFinalizers(); len(fin) > 0 {
		msg += "; its finalizers: " + strings.Join(fin, ", ")
	}
	return msg
}
