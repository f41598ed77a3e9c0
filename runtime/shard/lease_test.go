package shard

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/fake"
	coordinationv1client "k8s.io/client-go/kubernetes/typed/coordination/v1"

	"metacel.dev/metacel/runtime/hashslot"
)

// A renewal the API server answers after the deadline of the one before opens no slot: the
// others may have taken them meanwhile (it was sent in time, but committed late); the replica
// takes them again only through the table.
func TestARenewalAnsweredAfterTheDeadlineOpensNoSlot(t *testing.T) {
	ctx := t.Context()
	r := newReplicas(t)
	var slow atomic.Bool
	sent, answer := make(chan struct{}), make(chan struct{})
	a := r.startOn(ctx, "a", slowLeases{Clientset: r.client, before: func() {
		if slow.Load() {
			sent <- struct{}{}
			<-answer
		}
	}})
	r.start(ctx, "b", 0)
	r.settle(ctx, []string{"a", "b"}, partition("a", "b"))
	mine := writable(a)

	r.mu.Lock()
	r.unreachable["a"] = true
	r.mu.Unlock()
	r.advance(ctx, 8*time.Second, "a", "b") // a's renewals fail for 8 s, within its deadline
	r.mu.Lock()
	r.unreachable["a"] = false
	r.mu.Unlock()
	slow.Store(true)
	renewed := make(chan error, 1)
	go func() { renewed <- a.renew(ctx, 0) }() // sent at +8 s, before the deadline
	<-sent
	slow.Store(false) // the renewals after it go through at once
	// the API server holds it; a's Lease expires for b, which takes its slots
	r.advance(ctx, 9*time.Second, "b")
	if got := writable(r.all["b"]); got&mine != mine {
		t.Fatalf("b may write %s, want a's slots %s taken (the test's premise)", got.String(), mine.String())
	}
	close(answer)
	if err := <-renewed; err != nil {
		t.Fatal(err)
	}

	r.check()
	if got := writable(a); got != 0 {
		t.Errorf("after a renewal answered 9 s late (past its deadline), a may write %s, want nothing until it reads the table", got.String())
	}
	r.settle(ctx, []string{"a", "b"}, partition("a", "b"))
}

// startOn starts a replica, its clock with the others', on client.
func (r *replicas) startOn(ctx context.Context, identity string, client kubernetes.Interface) *Coordinator {
	clk := r.newClock(0)
	c := New(client, Options{Namespace: testNS, Identity: identity, LeaseDuration: 15 * time.Second,
		RenewDeadline: 10 * time.Second, RenewInterval: 2 * time.Second, Clock: clk}, func(_ context.Context, s hashslot.Set) { r.held(identity, s) })
	r.add(ctx, identity, c, clk)
	return c
}

// slowLeases is an API server whose Lease updates wait for before: it commits and answers them
// late.
type slowLeases struct {
	*fake.Clientset
	before func()
}

func (c slowLeases) CoordinationV1() coordinationv1client.CoordinationV1Interface {
	return slowCoordination{c.Clientset.CoordinationV1(), c.before}
}

type slowCoordination struct {
	coordinationv1client.CoordinationV1Interface
	before func()
}

func (c slowCoordination) Leases(namespace string) coordinationv1client.LeaseInterface {
	return slowLeaseClient{c.CoordinationV1Interface.Leases(namespace), c.before}
}

type slowLeaseClient struct {
	coordinationv1client.LeaseInterface
	before func()
}

func (l slowLeaseClient) Update(ctx context.Context, lease *coordinationv1.Lease, o metav1.UpdateOptions) (*coordinationv1.Lease, error) {
	l.before()
	return l.LeaseInterface.Update(ctx, lease, o)
}
