package shard

import (
	"context"
	"fmt"
	"strings"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/klog/v2"

	"metacel.dev/metacel/runtime/apistore"
	"metacel.dev/metacel/runtime/contract"
	"metacel.dev/metacel/runtime/hashslot"
)

// This replica's own Lease: renewed every RenewInterval on a goroutine of its own, so that no
// sync, hand-over or lock holds a renewal up. Each renewal says which slots the replica syncs
// (contract.AnnotationShardSlots), and a slot is said there before it is synced (claim) and until its syncs
// have stopped, so that the Leases tell who holds what when the table cannot.
//
// The deadline is checked before each renewal, and again once it is answered: a replica whose
// last successful renewal was sent RenewDeadline ago or more (it was paused, or the API server
// unreachable or slow to answer) may have had its slots taken meanwhile, so it stops syncing all
// of them (before it renews, or before the renewal answered late counts), and takes them again
// only through the table, read anew (claim's compare-and-swap refuses a table read before the
// others wrote it). Until it renews, Allows refuses every slot.

// LeaseName is the name of a replica's Lease.
func LeaseName(identity string) string {
	name := strings.ToLower(leasePrefix + identity)
	if errs := validation.IsDNS1123Subdomain(name); len(errs) > 0 {
		name = leasePrefix + fmt.Sprintf("%x", hashslot.Hash(types.UID(identity)))
	}
	return name
}

// renewEvery renews this replica's Lease every RenewInterval, and when the slots it syncs change.
func (c *Coordinator) renewEvery(ctx context.Context) {
	tick := c.o.Clock.NewTicker(c.o.RenewInterval)
	defer tick.Stop()
	for {
		_ = c.renew(ctx, 0)
		select {
		case <-ctx.Done():
			return
		case <-tick.C():
		case <-c.readvertise:
		}
	}
}

// renew writes this replica's Lease, saying it syncs the slots it holds and those of adding:
// after a lapse, only once it has stopped syncing every slot.
func (c *Coordinator) renew(ctx context.Context, adding hashslot.Set) error {
	c.leaseMu.Lock()
	defer c.leaseMu.Unlock()
	if c.lapsed() {
		c.stopAll(ctx)
	}
	sent := c.o.Clock.Now()
	lease, err := c.writeLease(ctx, metav1.NewMicroTime(sent), c.syncing()|adding, c.o.LeaseDuration)
	if err != nil {
		c.lease = nil // read it again next time
		klog.FromContext(ctx).Error(err, "Cannot renew this replica's shard Lease")
		return err
	}
	c.lease = lease
	c.peers.see(lease)
	if c.lapsed() {
		// answered after the deadline of the renewal before it: the others may have taken the
		// slots meanwhile (the API server may have committed it late), so this renewal opens
		// none of them; they are taken again through the table read anew
		c.stopAll(ctx)
	}
	c.mu.Lock()
	c.renewed = sent
	c.mu.Unlock()
	if c.o.Renewed != nil {
		c.o.Renewed(sent)
	}
	return nil
}

// lapsed reports whether this replica's last successful renewal was sent RenewDeadline ago or
// more (or never), by the monotonic clock and the wall clock, whichever counts more: the
// monotonic clock stops while a machine is suspended, the wall clock does not.
func (c *Coordinator) lapsed() bool {
	renewed := c.lastRenewed()
	if renewed.IsZero() {
		return true
	}
	return c.lapsedSince(renewed)
}

// lastRenewed is when this replica's last successful renewal was sent (zero: never).
func (c *Coordinator) lastRenewed() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.renewed
}

// lapsedSince reports whether RenewDeadline has passed since t, by the monotonic clock and the
// wall clock, whichever counts more.
func (c *Coordinator) lapsedSince(t time.Time) bool {
	now := c.o.Clock.Now()
	return max(now.Sub(t), now.Round(0).Sub(t.Round(0))) >= c.o.RenewDeadline
}

// writeLease creates or updates this replica's Lease; one deleted meanwhile is created again.
func (c *Coordinator) writeLease(ctx context.Context, now metav1.MicroTime, slots hashslot.Set, duration time.Duration) (*coordinationv1.Lease, error) {
	ctx, cancel := context.WithTimeout(ctx, requestTimeout)
	defer cancel()
	leases := c.client.CoordinationV1().Leases(c.o.Namespace)
	fresh := &coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{Name: LeaseName(c.o.Identity), Namespace: c.o.Namespace,
			Labels: map[string]string{contract.LabelShardMember: "true", contract.LabelManagedBy: contract.ManagedByValue}},
		Spec: coordinationv1.LeaseSpec{AcquireTime: &now},
	}
	renew := func(lease *coordinationv1.Lease) bool {
		seconds := int32(max(duration/time.Second, 1))
		lease.Spec.HolderIdentity, lease.Spec.LeaseDurationSeconds, lease.Spec.RenewTime = &c.o.Identity, &seconds, &now
		metav1.SetMetaDataAnnotation(&lease.ObjectMeta, contract.AnnotationShardSlots, slots.String())
		if c.o.Report != nil {
			lease.Annotations[contract.AnnotationShardReport] = c.o.Report()
		}
		return true
	}
	lease := c.lease
	if lease == nil {
		got, err := apistore.Get(ctx, leases, LeaseName(c.o.Identity))
		if err != nil {
			return nil, err
		}
		lease = got
	}
	got, err := apistore.Write(ctx, leases, fieldManager, lease, fresh, renew)
	if lease != nil && apierrors.IsNotFound(err) {
		return apistore.Write(ctx, leases, fieldManager, nil, fresh, renew)
	}
	return got, err
}

// deleteLease deletes this replica's Lease, when it leaves.
func (c *Coordinator) deleteLease(ctx context.Context) {
	ctx, cancel := context.WithTimeout(ctx, requestTimeout)
	defer cancel()
	err := c.client.CoordinationV1().Leases(c.o.Namespace).Delete(ctx, LeaseName(c.o.Identity), metav1.DeleteOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		klog.FromContext(ctx).Error(err, "Cannot delete this replica's shard Lease; it expires")
	}
}

// deleteDeadLeases deletes the Leases of the replicas long gone (peers.dead), each only at the
// version seen: a replica that renewed meanwhile keeps its Lease.
func (c *Coordinator) deleteDeadLeases(ctx context.Context) {
	for id, version := range c.peers.dead() {
		if id == c.o.Identity {
			continue
		}
		ctx, cancel := context.WithTimeout(ctx, requestTimeout)
		err := c.client.CoordinationV1().Leases(c.o.Namespace).Delete(ctx, LeaseName(id), metav1.DeleteOptions{Preconditions: &metav1.Preconditions{ResourceVersion: &version}})
		cancel()
		switch {
		case err == nil || apierrors.IsNotFound(err):
			klog.FromContext(ctx).Info("Deleted the shard Lease of a replica long gone", "replica", id)
		case apierrors.IsConflict(err):
		default:
			klog.FromContext(ctx).V(2).Info("Cannot delete the shard Lease of a replica long gone", "replica", id, "err", err)
		}
	}
}
