package shard

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	testingclock "k8s.io/utils/clock/testing"
)

// replicas steps coordinators over one fake API server, and checks on every hand-over that no
// slot is held by two of them at once.
type replicas struct {
	t      *testing.T
	clock  *testingclock.FakeClock
	client *fake.Clientset
	mu     sync.Mutex
	holds  map[string]Set
	all    map[string]*Coordinator
}

func newReplicas(t *testing.T) *replicas {
	client := fake.NewClientset()
	casConfigMaps(client)
	return &replicas{t: t, clock: testingclock.NewFakeClock(time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)),
		client: client, holds: map[string]Set{}, all: map[string]*Coordinator{}}
}

// casConfigMaps makes the fake API server keep resourceVersions of ConfigMaps and refuse an
// update of a version that is not the stored one, as the API server does (the fake tracker
// keeps no versions).
func casConfigMaps(client *fake.Clientset) {
	var mu sync.Mutex
	version := 0
	client.PrependReactor("*", "configmaps", func(a k8stesting.Action) (bool, runtime.Object, error) {
		mu.Lock()
		defer mu.Unlock()
		switch a.GetVerb() {
		case "create":
			cm := a.(k8stesting.CreateAction).GetObject().(*corev1.ConfigMap).DeepCopy()
			if _, err := client.Tracker().Get(a.GetResource(), cm.Namespace, cm.Name); err == nil {
				return true, nil, apierrors.NewAlreadyExists(a.GetResource().GroupResource(), cm.Name)
			}
			version++
			cm.ResourceVersion = fmt.Sprint(version)
			return true, cm, client.Tracker().Create(a.GetResource(), cm, cm.Namespace)
		case "update":
			cm := a.(k8stesting.UpdateAction).GetObject().(*corev1.ConfigMap).DeepCopy()
			stored, err := client.Tracker().Get(a.GetResource(), cm.Namespace, cm.Name)
			if err != nil {
				return true, nil, err
			}
			if stored.(*corev1.ConfigMap).ResourceVersion != cm.ResourceVersion {
				return true, nil, apierrors.NewConflict(a.GetResource().GroupResource(), cm.Name, errors.New("the object has been modified"))
			}
			version++
			cm.ResourceVersion = fmt.Sprint(version)
			return true, cm, client.Tracker().Update(a.GetResource(), cm, cm.Namespace)
		}
		return false, nil, nil
	})
}

func (r *replicas) start(ctx context.Context, identity string) *Coordinator {
	o := Options{Namespace: "metacel-system", Identity: identity, LeaseDuration: 15 * time.Second,
		RenewDeadline: 10 * time.Second, RenewInterval: 2 * time.Second, Clock: r.clock}
	c := New(r.client, o, func(_ context.Context, s Set) {
		r.mu.Lock()
		defer r.mu.Unlock()
		for other, held := range r.holds {
			if other != identity && held&s != 0 {
				r.t.Errorf("%s takes slots %s that %s holds (%s)", identity, (held & s).String(), other, held.String())
			}
		}
		r.holds[identity] = s
	})
	if err := c.watch(ctx); err != nil {
		r.t.Fatal(err)
	}
	r.all[identity] = c
	return c
}

// kill forgets a replica's slots, as a process killed syncs nothing: its Lease stays until it
// expires, and its entries in the table.
func (r *replicas) kill(identity string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.holds, identity)
}

// advance moves the clock on second by second, the live replicas stepping each second (as their
// tickers make them).
func (r *replicas) advance(ctx context.Context, d time.Duration, live ...string) {
	for range int(d / time.Second) {
		r.clock.Step(time.Second)
		for _, id := range live {
			r.all[id].step(ctx)
		}
		r.leasesSeen(live)
	}
}

// leasesSeen waits until every live replica's informer has seen the Lease every live replica last
// wrote: the fake clock runs far ahead of the informers otherwise.
func (r *replicas) leasesSeen(live []string) {
	r.t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for _, observer := range live {
		for _, member := range live {
			want := r.all[member].lease
			for want != nil {
				obj, ok, _ := r.all[observer].leases.GetByKey("metacel-system/" + LeaseName(member))
				if ok && obj.(*coordinationv1.Lease).ResourceVersion == want.ResourceVersion {
					break
				}
				if time.Now().After(deadline) {
					r.t.Fatalf("%s does not see %s's Lease", observer, member)
				}
				time.Sleep(time.Millisecond)
			}
		}
	}
}

// settle steps the live coordinators until want holds, polling the informers' view.
func (r *replicas) settle(ctx context.Context, live []string, want func(map[string]Set) error) {
	r.t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		for _, id := range live {
			r.all[id].step(ctx)
		}
		r.mu.Lock()
		err := want(r.holds)
		r.mu.Unlock()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			r.t.Fatalf("not settled: %v", err)
		}
		time.Sleep(5 * time.Millisecond) // let the informers see the writes (polling, with a deadline)
	}
}

// partition checks that the live replicas hold every slot, about evenly.
func partition(live ...string) func(map[string]Set) error {
	return func(holds map[string]Set) error {
		var union Set
		for _, id := range live {
			s := holds[id]
			if n := s.Count(); n < Slots/len(live) || n > Slots/len(live)+1 {
				return fmt.Errorf("%s holds %d slots (%s)", id, n, s.String())
			}
			union |= s
		}
		if union.Count() != Slots {
			return fmt.Errorf("the live replicas hold %d slots", union.Count())
		}
		return nil
	}
}

func TestReplicasSplitTheSlotsAndHandThemOver(t *testing.T) {
	ctx := t.Context()
	r := newReplicas(t)
	for _, id := range []string{"a", "b", "c"} {
		r.start(ctx, id)
	}
	r.settle(ctx, []string{"a", "b", "c"}, partition("a", "b", "c"))

	// c is killed: it syncs and renews no more; a and b take its slots once its Lease has expired
	r.kill("c")
	r.advance(ctx, 16*time.Second, "a", "b")
	r.settle(ctx, []string{"a", "b"}, partition("a", "b"))

	// c comes back (a new process, a new identity): the slots are split in three again
	r.start(ctx, "c2")
	r.settle(ctx, []string{"a", "b", "c2"}, partition("a", "b", "c2"))
}

func TestAReplicaThatCannotRenewStopsSyncingBeforeItsLeaseExpires(t *testing.T) {
	ctx := t.Context()
	r := newReplicas(t)
	a := r.start(ctx, "a")
	r.settle(ctx, []string{"a"}, partition("a"))
	r.client.PrependReactor("update", "leases", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, fmt.Errorf("the API server is unreachable")
	})
	r.clock.Step(11 * time.Second) // past RenewDeadline (10s), before LeaseDuration (15s)
	a.step(ctx)
	if got := a.Held(); got != 0 {
		t.Errorf("holds %s after failing to renew for 11s, want nothing", got.String())
	}
}

func TestAssign(t *testing.T) {
	members := []string{"a", "b", "c"}
	var union Set
	for _, m := range members {
		s := Assign(members, m)
		if union&s != 0 {
			t.Errorf("%s overlaps", m)
		}
		union |= s
	}
	if union.Count() != Slots {
		t.Errorf("assigned %d slots, want %d", union.Count(), Slots)
	}
	if Assign(members, "d") != 0 {
		t.Error("a replica not among the members is assigned slots")
	}
}

// A replica whose informer has not seen another's Lease yet (it has just started, or its informer
// is behind) reads that Lease before it takes the slots the table gives it: a Lease not seen is
// no proof of a replica gone. One whose Lease is gone from the API server has its slots taken.
func TestAnOwnersLeaseNotSeenYetIsReadBeforeItsSlotsAreTaken(t *testing.T) {
	for _, tt := range []struct {
		name      string
		leaseGone bool
		wantB     Set
	}{
		{"the owner renews its Lease: its slots stay its own", false, 0},
		{"the owner's Lease is deleted: its slots are taken", true, ^Set(0)},
	} {
		t.Run(tt.name, func(t *testing.T) {
			ctx := t.Context()
			r := newReplicas(t)
			r.start(ctx, "a")
			r.settle(ctx, []string{"a"}, partition("a"))
			b := r.start(ctx, "b")
			r.leasesSeen([]string{"a", "b"})
			// b's informer loses sight of a's Lease, as one that has not seen it yet
			if obj, ok, _ := b.leases.GetByKey("metacel-system/" + LeaseName("a")); !ok || b.leases.Delete(obj) != nil {
				t.Fatal("b's informer does not hold a's Lease")
			}
			if tt.leaseGone {
				r.kill("a")
				if err := r.client.CoordinationV1().Leases("metacel-system").Delete(ctx, LeaseName("a"), metav1.DeleteOptions{}); err != nil {
					t.Fatal(err)
				}
			}
			b.step(ctx)
			if got := b.Held(); got != tt.wantB {
				t.Errorf("b holds %s, want %s", got.String(), tt.wantB.String())
			}
		})
	}
}
