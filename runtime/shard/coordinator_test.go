package shard

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"metacel.dev/metacel/runtime/hashslot"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	testingclock "k8s.io/utils/clock/testing"
)

const testNS = "metacel-system"

// replicas steps coordinators over one fake API server, each on its own clock (stepped together,
// some set apart), and checks after every step that no slot may be written by two of them.
type replicas struct {
	t      *testing.T
	start0 time.Time
	client *fake.Clientset
	mu     sync.Mutex
	holds  map[string]hashslot.Set
	all    map[string]*Coordinator
	clocks map[string]*testingclock.FakeClock
	// blocked, when set for a replica, is waited on by its Hold when it gives slots up
	blocked map[string]chan struct{}
	// unreachable replicas cannot write their Leases
	unreachable map[string]bool
	elapsed     time.Duration
}

func newReplicas(t *testing.T) *replicas {
	client := fake.NewClientset()
	r := &replicas{t: t, start0: time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC), client: client,
		holds: map[string]hashslot.Set{}, all: map[string]*Coordinator{}, clocks: map[string]*testingclock.FakeClock{},
		blocked: map[string]chan struct{}{}, unreachable: map[string]bool{}}
	casConfigMaps(client)
	client.PrependReactor("*", "leases", func(a k8stesting.Action) (bool, runtime.Object, error) {
		if a.GetVerb() != "update" && a.GetVerb() != "create" {
			return false, nil, nil
		}
		l := a.(interface{ GetObject() runtime.Object }).GetObject().(*coordinationv1.Lease)
		r.mu.Lock()
		defer r.mu.Unlock()
		if l.Spec.HolderIdentity != nil && r.unreachable[*l.Spec.HolderIdentity] {
			return true, nil, fmt.Errorf("the API server is unreachable")
		}
		return false, nil, nil
	})
	return r
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

// start starts a replica whose clock is skew apart from the others'.
func (r *replicas) start(ctx context.Context, identity string, skew time.Duration) *Coordinator {
	clk := r.newClock(skew)
	o := Options{Namespace: testNS, Identity: identity, LeaseDuration: 15 * time.Second,
		RenewDeadline: 10 * time.Second, RenewInterval: 2 * time.Second, Clock: clk}
	c := New(r.client, o, func(_ context.Context, s hashslot.Set) { r.held(identity, s) })
	r.add(ctx, identity, c, clk)
	return c
}

// newClock is a replica's clock, skew apart from the others'.
func (r *replicas) newClock(skew time.Duration) *testingclock.FakeClock {
	return testingclock.NewFakeClock(r.now().Add(skew))
}

// add starts c's informers and holder, and steps it with the others on clk.
func (r *replicas) add(ctx context.Context, identity string, c *Coordinator, clk *testingclock.FakeClock) {
	if err := c.watch(ctx); err != nil {
		r.t.Fatal(err)
	}
	go c.holdEvery(ctx)
	r.mu.Lock()
	r.all[identity], r.clocks[identity] = c, clk
	r.mu.Unlock()
}

// now is the time of the replicas that are not set apart.
func (r *replicas) now() time.Time {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.start0.Add(r.elapsed)
}

// held records what a replica's Hold was told; giving slots up waits while the replica is blocked.
func (r *replicas) held(identity string, s hashslot.Set) {
	r.mu.Lock()
	block := r.blocked[identity]
	gives := r.holds[identity]&^s != 0
	r.mu.Unlock()
	if block != nil && gives {
		<-block
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.holds[identity] = s
}

// writable returns the slots a replica may write now.
func writable(c *Coordinator) hashslot.Set {
	var s hashslot.Set
	for slot := range hashslot.Count {
		if c.Allows(slot) {
			s |= 1 << slot
		}
	}
	return s
}

// check fails the test when two replicas may write one slot.
func (r *replicas) check() {
	r.t.Helper()
	r.mu.Lock()
	defer r.mu.Unlock()
	seen := map[int]string{}
	for id, c := range r.all {
		for slot := range hashslot.Count {
			if !c.Allows(slot) {
				continue
			}
			if other, ok := seen[slot]; ok {
				r.t.Fatalf("slot %d may be written by %s and %s at once", slot, other, id)
			}
			seen[slot] = id
		}
	}
}

// tick moves every clock on one second; the replicas of live renew their Leases and step, as
// their goroutines make them (the others are frozen, or dead).
func (r *replicas) tick(ctx context.Context, live ...string) {
	r.mu.Lock()
	for _, clk := range r.clocks {
		clk.Step(time.Second)
	}
	r.elapsed += time.Second
	r.mu.Unlock()
	r.run(ctx, live...)
}

// run has the replicas of live renew and step once, then checks.
func (r *replicas) run(ctx context.Context, live ...string) {
	for _, id := range live {
		_ = r.all[id].renew(ctx, 0)
	}
	r.leasesSeen(live)
	for _, id := range live {
		r.all[id].step(ctx)
		r.check()
	}
}

// advance ticks d, second by second.
func (r *replicas) advance(ctx context.Context, d time.Duration, live ...string) {
	for range int(d / time.Second) {
		r.tick(ctx, live...)
	}
}

// leasesSeen waits until every started replica's informer has seen the Lease every live replica
// last wrote: the fake clocks run far ahead of the informers otherwise.
func (r *replicas) leasesSeen(live []string) {
	r.t.Helper()
	eventually(r.t, 5*time.Second, "every replica to see the live replicas' Leases", func() error {
		for _, observer := range r.all {
			for _, member := range live {
				want := r.all[member].lease
				if want == nil {
					continue
				}
				obj, ok, _ := observer.leases.GetByKey(testNS + "/" + LeaseName(member))
				if !ok || recordOf(obj.(*coordinationv1.Lease)) != recordOf(want) {
					return fmt.Errorf("%s does not see %s's Lease", observer.o.Identity, member)
				}
			}
		}
		return nil
	})
}

// settle runs the live replicas (no time passing) until want holds, polling the informers' view.
func (r *replicas) settle(ctx context.Context, live []string, want func(map[string]hashslot.Set) error) {
	r.t.Helper()
	eventually(r.t, 10*time.Second, "the replicas to settle", func() error {
		r.run(ctx, live...)
		r.mu.Lock()
		defer r.mu.Unlock()
		return want(r.holds)
	})
}

// partition checks that the live replicas hold every slot, about evenly.
func partition(live ...string) func(map[string]hashslot.Set) error {
	return func(holds map[string]hashslot.Set) error {
		var union hashslot.Set
		for _, id := range live {
			s := holds[id]
			if n := s.Count(); n < hashslot.Count/len(live) || n > hashslot.Count/len(live)+1 {
				return fmt.Errorf("%s holds %d slots (%s)", id, n, s.String())
			}
			union |= s
		}
		if union.Count() != hashslot.Count {
			return fmt.Errorf("the live replicas hold %d slots", union.Count())
		}
		return nil
	}
}

func (r *replicas) startAll(ctx context.Context, ids ...string) {
	for _, id := range ids {
		r.start(ctx, id, 0)
	}
	r.settle(ctx, ids, partition(ids...))
}

func TestReplicasSplitTheSlotsAndHandThemOver(t *testing.T) {
	ctx := t.Context()
	r := newReplicas(t)
	r.startAll(ctx, "a", "b", "c")

	// c is killed: it syncs and renews no more; a and b take its slots once its Lease has expired
	r.advance(ctx, 16*time.Second, "a", "b")
	r.settle(ctx, []string{"a", "b"}, partition("a", "b"))

	// c comes back (a new process, a new identity): the slots are split in three again, once
	// c's Lease, new to c2, has not changed for its duration
	r.start(ctx, "c2", 0)
	r.advance(ctx, 16*time.Second, "a", "b", "c2")
	r.settle(ctx, []string{"a", "b", "c2"}, partition("a", "b", "c2"))
}

func TestAReplicaThatCannotRenewStopsSyncingBeforeItsLeaseExpires(t *testing.T) {
	ctx := t.Context()
	r := newReplicas(t)
	r.startAll(ctx, "a")
	a := r.all["a"]
	r.unreachable["a"] = true
	r.advance(ctx, 11*time.Second, "a") // past RenewDeadline (10s), before LeaseDuration (15s)
	if got := writable(a); got != 0 {
		t.Errorf("may write %s after failing to renew for 11s, want nothing", got.String())
	}
	eventually(t, 5*time.Second, "the replica to hold no slot", func() error {
		if got := a.Held(); got != 0 {
			return fmt.Errorf("holds %s after failing to renew for 11s, want nothing", got.String())
		}
		return nil
	})
}

// A replica paused past its Lease (SIGSTOP, a GC pause, a stalled VM) writes nothing when it
// resumes: not before its first renewal (the deadline is checked first), and after it only the
// slots it takes again through the table as the API server has it.
func TestAPausedReplicaWritesNothingUntilItHoldsTheSlotsAgain(t *testing.T) {
	for _, tt := range []struct {
		name  string
		pause time.Duration
	}{
		{"paused past its renew deadline, its slots still its own", 12 * time.Second},
		{"paused past its Lease, its slots taken", 25 * time.Second},
	} {
		t.Run(tt.name, func(t *testing.T) {
			ctx := t.Context()
			r := newReplicas(t)
			r.startAll(ctx, "a", "b", "c")
			c := r.all["c"]
			before := writable(c)
			r.advance(ctx, tt.pause, "a", "b") // c is frozen: neither renews nor steps
			if got := writable(c); got != 0 {
				t.Fatalf("c may write %s after a pause of %s", got.String(), tt.pause)
			}
			// c resumes: its renewal goroutine runs first
			if err := c.renew(ctx, 0); err != nil {
				t.Fatal(err)
			}
			r.check()
			if got := writable(c); got != 0 {
				t.Errorf("c may write %s right after renewing, before reading the table again (had %s)", got.String(), before.String())
			}
			r.settle(ctx, []string{"a", "b", "c"}, partition("a", "b", "c"))
		})
	}
}

// A replica's Lease expires by what the others saw of it, never by its renewTime: a replica whose
// clock is apart from the others' (or that writes a backdated renewTime) keeps its slots while it
// renews, and when it stops, it stops writing before anyone takes them.
func TestClockSkewNeverGivesASlotToTwoReplicas(t *testing.T) {
	for _, tt := range []struct {
		name string
		skew time.Duration
	}{
		{"b's clock 10s behind", -10 * time.Second},
		{"b's clock 10s ahead", 10 * time.Second},
		{"b writes a renewTime a minute old", -time.Minute},
	} {
		t.Run(tt.name, func(t *testing.T) {
			ctx := t.Context()
			r := newReplicas(t)
			r.start(ctx, "a", 0)
			r.start(ctx, "b", tt.skew)
			r.settle(ctx, []string{"a", "b"}, partition("a", "b"))
			r.advance(ctx, 20*time.Second, "a", "b") // b renews: it keeps its slots
			r.mu.Lock()
			bHolds := r.holds["b"]
			r.mu.Unlock()
			if bHolds.Count() != hashslot.Count/2 {
				t.Fatalf("b holds %s after 20s of renewals, want half the slots", bHolds.String())
			}
			// b cannot renew: it stops writing, then a takes its slots, never both at once
			r.unreachable["b"] = true
			r.advance(ctx, 17*time.Second, "a", "b")
			r.settle(ctx, []string{"a", "b"}, partition("a"))
		})
	}
}

// Giving slots up waits for the syncs under way, which may take long (a parent with 1,000
// children, a slow webhook): the renewals go on meanwhile, so nobody takes those slots until
// their syncs have ended.
func TestARenewalGoesOnDuringALongSync(t *testing.T) {
	ctx := t.Context()
	r := newReplicas(t)
	r.startAll(ctx, "a")
	release := make(chan struct{})
	r.mu.Lock()
	r.blocked["a"] = release
	r.mu.Unlock()
	r.start(ctx, "b", 0)
	for range 30 { // a's sync of a slot it gives up takes 30s
		r.tick(ctx, "a", "b")
		r.mu.Lock()
		a, b := r.holds["a"], r.holds["b"]
		r.mu.Unlock()
		if a != ^hashslot.Set(0) {
			t.Fatalf("a's Hold returned while blocked: holds %s", a.String())
		}
		if b != 0 {
			t.Fatalf("b took %s while a's syncs of them went on", b.String())
		}
	}
	close(release)
	r.settle(ctx, []string{"a", "b"}, partition("a", "b"))
}

// A table deleted or corrupted is rebuilt from what the replicas' Leases say they sync, not read
// as every slot free: a replica joining then takes only slots their holders let go of.
func TestALostTableIsRebuiltFromTheHolders(t *testing.T) {
	for _, tt := range []struct {
		name string
		lose func(ctx context.Context, r *replicas) error
	}{
		{"deleted", func(ctx context.Context, r *replicas) error {
			return r.client.CoreV1().ConfigMaps(testNS).Delete(ctx, TableName, metav1.DeleteOptions{})
		}},
		{"corrupted", func(ctx context.Context, r *replicas) error {
			cm, err := r.client.CoreV1().ConfigMaps(testNS).Get(ctx, TableName, metav1.GetOptions{})
			if err != nil {
				return err
			}
			cm.Data[keyOwners] = `["a", "b"`
			_, err = r.client.CoreV1().ConfigMaps(testNS).Update(ctx, cm, metav1.UpdateOptions{})
			return err
		}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			ctx := t.Context()
			r := newReplicas(t)
			r.startAll(ctx, "a", "b", "c")
			if err := tt.lose(ctx, r); err != nil {
				t.Fatal(err)
			}
			r.start(ctx, "d", 0) // joins first, while the table is lost
			r.settle(ctx, []string{"d", "a", "b", "c"}, partition("a", "b", "c", "d"))
			got, err := r.client.CoreV1().ConfigMaps(testNS).Get(ctx, TableName, metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			table := parseTable(got)
			for id, c := range r.all {
				for slot := range hashslot.Count {
					if c.Held().Has(slot) && table.owners[slot] != id {
						t.Errorf("%s holds slot %d; the table gives it to %q", id, slot, table.owners[slot])
					}
				}
			}
		})
	}
}

// A Lease deleted while its replica runs is no dead replica: its slots move only once no change
// of it has been seen for the Lease duration (and it comes back at the next renewal).
func TestADeletedLeaseIsNotADeadReplica(t *testing.T) {
	ctx := t.Context()
	r := newReplicas(t)
	r.startAll(ctx, "a", "b")
	r.mu.Lock()
	bHolds := r.holds["b"]
	r.mu.Unlock()
	if err := r.client.CoordinationV1().Leases(testNS).Delete(ctx, LeaseName("b"), metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	r.all["b"].lease = nil // b renews anew: it reads its Lease, finds none, and creates it
	eventually(t, 5*time.Second, "a to see b's Lease deleted", func() error {
		if _, ok, _ := r.all["a"].leases.GetByKey(testNS + "/" + LeaseName("b")); ok {
			return errors.New("a still sees b's Lease")
		}
		return nil
	})
	r.all["a"].step(ctx)
	r.check()
	r.advance(ctx, 3*time.Second, "a", "b")
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.holds["b"] != bHolds {
		t.Errorf("b holds %s after its Lease was deleted, want %s", r.holds["b"].String(), bHolds.String())
	}
}

// A replica that has just started and never saw another's Lease reads it before it takes the
// slots the table gives it; a Lease absent too counts as gone only a Lease duration later.
func TestAnOwnersLeaseNotSeenYetIsReadBeforeItsSlotsAreTaken(t *testing.T) {
	for _, tt := range []struct {
		name      string
		leaseGone bool
	}{
		{"the owner renews its Lease: its slots stay its own", false},
		{"the owner's Lease is deleted: its slots are taken a Lease duration later", true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			ctx := t.Context()
			r := newReplicas(t)
			r.startAll(ctx, "a")
			if tt.leaseGone {
				if err := r.client.CoordinationV1().Leases(testNS).Delete(ctx, LeaseName("a"), metav1.DeleteOptions{}); err != nil {
					t.Fatal(err)
				}
				delete(r.all, "a") // a is dead: its holds no longer count
			}
			b := r.start(ctx, "b", 0)
			r.run(ctx, "b")
			if got := writable(b); got != 0 {
				t.Errorf("b took %s at once", got.String())
			}
			if !tt.leaseGone {
				return
			}
			r.advance(ctx, 16*time.Second, "b")
			r.settle(ctx, []string{"b"}, partition("b"))
		})
	}
}

func TestAssign(t *testing.T) {
	members := []string{"a", "b", "c"}
	var union hashslot.Set
	for _, m := range members {
		s := Assign(members, m)
		if union&s != 0 {
			t.Errorf("%s overlaps", m)
		}
		union |= s
	}
	if union.Count() != hashslot.Count {
		t.Errorf("assigned %d slots, want %d", union.Count(), hashslot.Count)
	}
	if Assign(members, "d") != 0 {
		t.Error("a replica not among the members is assigned slots")
	}
}

// eventually polls f until it succeeds, failing the test after timeout with what it waited for
// and f's last error.
func eventually(t *testing.T, timeout time.Duration, what string, f func() error) {
	t.Helper()
	var last error
	if err := wait.PollUntilContextTimeout(t.Context(), time.Millisecond, timeout, true, func(context.Context) (bool, error) {
		last = f()
		return last == nil, nil
	}); err != nil {
		t.Fatalf("waiting %s for %s: %v (last: %v)", timeout, what, err, last)
	}
}

// A claim that stalls between its write of the table and its renewal (a hung request, a pause)
// for longer than the Lease: meanwhile the others judged its replica gone and took the slots it
// claimed. It must not start syncing them when it resumes: after a lapse, a slot is taken again
// only through a table read anew, never through the claim's older read.
func TestAClaimThatStallsPastTheLeaseTakesNothing(t *testing.T) {
	ctx := t.Context()
	r := newReplicas(t)
	r.startAll(ctx, "a")
	b := r.start(ctx, "b", 0)
	stalled, resume := make(chan struct{}), make(chan struct{})
	var once sync.Once
	r.client.PrependReactor("update", "configmaps", func(a k8stesting.Action) (bool, runtime.Object, error) {
		cm := a.(k8stesting.UpdateAction).GetObject().(*corev1.ConfigMap)
		if cm.Name == TableName && strings.Contains(cm.Data[keyOwners], `"b"`) {
			once.Do(func() {
				b.leaseMu.Lock() // b's claim, once written, waits for its renewal: a hung request
				close(stalled)
			})
		}
		return false, nil, nil
	})
	r.run(ctx, "b") // b's Lease, which a then sees
	done := make(chan struct{})
	go func() { // b renews and steps until its claim has been written, stalled and resumed
		defer close(done)
		for {
			_ = b.renew(ctx, 0)
			b.step(ctx)
			select {
			case <-resume:
				return
			case <-ctx.Done():
				return
			case <-time.After(10 * time.Millisecond):
			}
		}
	}()
	eventually(t, 10*time.Second, "b's claim to stall", func() error {
		select {
		case <-stalled:
			return nil
		default:
		}
		r.run(ctx, "a") // a gives b its share of the slots
		return errors.New("b has claimed nothing yet")
	})
	r.advance(ctx, 25*time.Second, "a") // b's Lease expires: a takes b's slots back
	close(resume)
	b.leaseMu.Unlock()
	<-done
	r.check()
}

// A replica that stops cleanly gives its slots back at once: the others take them within a
// second or two, not after its Lease's duration (15 s), as docs/operating.md says.
func TestAReplicaThatLeavesHandsItsSlotsOverAtOnce(t *testing.T) {
	ctx := t.Context()
	r := newReplicas(t)
	r.startAll(ctx, "a", "b")
	b := r.all["b"]
	b.leave(ctx)
	r.mu.Lock()
	delete(r.all, "b") // gone: no longer checked, nor waited on to see Leases
	r.mu.Unlock()
	r.advance(ctx, 2*time.Second, "a")
	r.settle(ctx, []string{"a"}, partition("a"))
}
