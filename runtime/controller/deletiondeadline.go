package controller

import (
	"context"
	"fmt"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/klog/v2"

	"metacel.dev/metacel/runtime/contract"
	"metacel.dev/metacel/runtime/decide"
	"metacel.dev/metacel/runtime/render"
)

// DeletionDeadline is how long a child of a deleted parent may be deleting while it holds up
// the deletion of the others (children go in the reverse of the order they are applied in)
// before the parent's Ready condition says so (DeletionBlocked).
const DeletionDeadline = 5 * time.Minute

// holdUp handles a deleted parent whose children are not all gone: remaining, read from the cache
// or the API server. Their deletions re-sync the parent; when one being deleted holds up the
// others (decide.Holding), the parent is synced again at the deadline, and, past it, its Ready
// condition names that child and since when. Nothing is remembered: each sync reads it again.
func (f *cleanup) holdUp(ctx context.Context, parent *unstructured.Unstructured, remaining []*unstructured.Unstructured) error {
	holding := decide.Holding(remaining, f.policy, f.previous())
	if holding == nil {
		return nil
	}
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
	msg := fmt.Sprintf("the deletion waits for %s %s, being deleted since %s (longer than %s): the children it waits for are deleted once it is gone",
		holding.GetKind(), klog.KObj(holding), holding.GetDeletionTimestamp().UTC().Format(time.RFC3339), DeletionDeadline)
	if fin := holding.GetFinalizers(); len(fin) > 0 {
		msg += "; its finalizers: " + strings.Join(fin, ", ")
	}
	return msg
}
