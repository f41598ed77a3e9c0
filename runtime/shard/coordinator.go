package shard

import (
	"context"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"metacel.dev/metacel/runtime/contract"
	"metacel.dev/metacel/runtime/hashslot"
)

// Names in the API server (the labels and annotations are package contract's).
const (
	// TableName is the ConfigMap holding the owner of each slot, labelled
	// contract.LabelShardTable.
	TableName    = "metacel-shards"
	keyOwners    = "owners"
	leasePrefix  = "metacel-shard-"
	fieldManager = "metacel-shards"
	// requestTimeout bounds each request.
	requestTimeout = 10 * time.Second
	// stepInterval is how often the table is looked at, besides on each change seen.
	stepInterval = time.Second
)

// Options configure a Coordinator.
type Options struct {
	// Namespace holds the Leases and the table.
	Namespace string
	// Identity names this replica; unique among the replicas.
	Identity string
	// LeaseDuration is how long a replica's Lease stays valid after the others last saw it
	// renewed; they take its slots once it has passed. RenewDeadline (< LeaseDuration) is how
	// long after sending its last successful renewal a replica goes on syncing. RenewInterval is
	// how often it renews.
	LeaseDuration, RenewDeadline, RenewInterval time.Duration
	Clock                                       clock.WithTicker
	// Report, when set, gives what this replica tells the others at each renewal of its Lease
	// (Reports): e.g. how many parents it holds.
	Report func() string
	// Renewed, when set, is told when each successful renewal of this replica's Lease was sent:
	// a write fence in front of the replica's clients opens until then + RenewDeadline.
	Renewed func(sent time.Time)
}

// Hold is told the slots this replica may sync now; when it returns, the syncs of the slots it
// no longer holds have stopped. Calls are serialized.
type Hold func(ctx context.Context, slots hashslot.Set)

// Coordinator takes and gives up slots for this replica (see the package doc).
type Coordinator struct {
	client kubernetes.Interface
	o      Options
	hold   Hold
	peers  *peers

	leases, tables cache.Indexer
	// kick wakes the step loop, readvertise the renewals, wake the holder
	kick, readvertise, wake chan struct{}

	// leaseMu serializes the writes of this replica's Lease; lease is it as last written
	leaseMu sync.Mutex
	lease   *coordinationv1.Lease

	mu sync.Mutex
	// renewed is when the last successful renewal was sent (zero: never)
	renewed time.Time
	// target is the slots the holder is to hold; held those Hold was last told (it returned)
	target, held hashslot.Set
	// allowed is the slots whose parents may be written now (Allows), within target
	allowed atomic.Uint64
	// lastStep is when the step loop last ran; fresh, that the next step reads the table anew
	lastStep time.Time
	fresh    bool
}

// New returns the coordinator of one replica.
func New(client kubernetes.Interface, o Options, hold Hold) *Coordinator {
	if o.Clock == nil {
		o.Clock = clock.RealClock{}
	}
	return &Coordinator{client: client, o: o, hold: hold, peers: newPeers(o.Clock),
		kick: make(chan struct{}, 1), readvertise: make(chan struct{}, 1), wake: make(chan struct{}, 1)}
}

// Held returns the slots this replica syncs now (Hold was last told them).
func (c *Coordinator) Held() hashslot.Set {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.held
}

// Allows reports whether the parents of slot may be written now: this replica holds the slot in
// the table, has not started giving it up, and sent its last successful renewal less than
// RenewDeadline ago. Checked before every write of a parent's sync (see WithSlot).
func (c *Coordinator) Allows(slot int) bool {
	return hashslot.Set(c.allowed.Load()).Has(slot) && !c.lapsed()
}

// Run takes part in sharding until ctx is done; then it stops syncing, gives its slots back and
// deletes its Lease, so that the others take them at once (a replica killed does neither: its
// slots move once its Lease has expired).
func (c *Coordinator) Run(ctx context.Context) error {
	logger := klog.FromContext(ctx).WithValues("identity", c.o.Identity)
	ctx = klog.NewContext(ctx, logger)
	if err := c.watch(ctx); err != nil {
		return err
	}
	var wg sync.WaitGroup
	wg.Go(func() { c.renewEvery(ctx) })
	wg.Go(func() { c.holdEvery(ctx) })
	tick := c.o.Clock.NewTicker(stepInterval)
	defer tick.Stop()
	for {
		c.step(ctx)
		select {
		case <-ctx.Done():
			wg.Wait()
			c.leave(klog.NewContext(context.Background(), logger))
			return nil
		case <-tick.C():
		case <-c.kick:
		}
	}
}

// watch starts the informers of the members' Leases and of the table.
func (c *Coordinator) watch(ctx context.Context) error {
	leases := informers.NewSharedInformerFactoryWithOptions(c.client, 0, informers.WithNamespace(c.o.Namespace),
		informers.WithTweakListOptions(func(o *metav1.ListOptions) { o.LabelSelector = contract.LabelShardMember + "=true" }))
	tables := informers.NewSharedInformerFactoryWithOptions(c.client, 0, informers.WithNamespace(c.o.Namespace),
		informers.WithTweakListOptions(func(o *metav1.ListOptions) { o.LabelSelector = contract.LabelShardTable + "=true" }))
	li, ti := leases.Coordination().V1().Leases().Informer(), tables.Core().V1().ConfigMaps().Informer()
	seen := cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { c.seeLease(obj, false) },
		UpdateFunc: func(_, obj any) { c.seeLease(obj, false) },
		DeleteFunc: func(obj any) { c.seeLease(obj, true) },
	}
	kick := cache.ResourceEventHandlerFuncs{
		AddFunc:    func(any) { c.poke() },
		UpdateFunc: func(any, any) { c.poke() },
		DeleteFunc: func(any) { c.poke() },
	}
	if _, err := li.AddEventHandler(seen); err != nil {
		return err
	}
	if _, err := ti.AddEventHandler(kick); err != nil {
		return err
	}
	leases.Start(ctx.Done())
	tables.Start(ctx.Done())
	if !cache.WaitFor(ctx, "", li.HasSyncedChecker(), ti.HasSyncedChecker()) {
		return ctx.Err()
	}
	c.mu.Lock()
	c.leases, c.tables = li.GetIndexer(), ti.GetIndexer()
	c.mu.Unlock()
	return nil
}

// seeLease records a Lease the informer delivers (gone: deleted), and wakes the step loop.
func (c *Coordinator) seeLease(obj any, gone bool) {
	if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = d.Obj
	}
	if l, ok := obj.(*coordinationv1.Lease); ok {
		if gone {
			c.peers.vanished(l)
		} else {
			c.peers.see(l)
		}
	}
	c.poke()
}

func (c *Coordinator) poke() { signal(c.kick) }

func signal(ch chan struct{}) {
	select {
	case ch <- struct{}{}:
	default:
	}
}

// step gives up the slots this replica should no longer hold and takes those it should and may,
// narrated:
func (c *Coordinator) step(ctx context.Context) {
	// 1. A replica that has not renewed for RenewDeadline syncs nothing: others may take its slots.
	if c.lapsed() {
		c.stopAll(ctx)
		return
	}
	// 2. Read the table: from the API server after a lapse or a pause of this loop.
	t, err := c.readTable(ctx, c.takeFresh())
	if err != nil {
		c.retry(ctx, err)
		return
	}
	// 3. The live replicas decide which slots are whose; a slot the table gives another is not ours.
	c.deleteDeadLeases(ctx)
	live := c.peers.live()
	want := Assign(c.members(live), c.o.Identity)
	c.narrow(ctx, want&^takenByOthers(t.owners, c.o.Identity))
	// 4. Write the table back whole, with the slots we sync, then free what we let go of, then
	// take what we should.
	for _, write := range []func() error{
		func() error { return c.repair(ctx, &t, live) },
		func() error { return c.release(ctx, &t, want) },
		func() error { return c.claim(ctx, &t, want, live) },
	} {
		if err := write(); err != nil {
			c.retry(ctx, err)
			return
		}
	}
}

// takeFresh reports whether this step must read the table from the API server: after a lapse, or
// when the loop did not run for longer than the renew interval (a pause: what the informer
// holds may be from before others changed it).
func (c *Coordinator) takeFresh() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	now := c.o.Clock.Now()
	fresh := c.fresh || (!c.lastStep.IsZero() && now.Sub(c.lastStep) > max(c.o.RenewInterval, 2*stepInterval))
	c.lastStep, c.fresh = now, false
	return fresh
}

func (c *Coordinator) retry(ctx context.Context, err error) {
	c.mu.Lock()
	c.fresh = true
	c.mu.Unlock()
	if apierrors.IsConflict(err) || apierrors.IsAlreadyExists(err) {
		klog.FromContext(ctx).V(2).Info("Shard table changed meanwhile; reading it again", "err", err)
		c.poke()
		return
	}
	klog.FromContext(ctx).Error(err, "Cannot update the shard table; will retry")
}

// members returns the identities of the live replicas, sorted; this replica is one of them
// while its renewals go through (step stops it otherwise).
func (c *Coordinator) members(live map[string]sighting) []string {
	out := []string{c.o.Identity}
	for id := range live {
		if id != c.o.Identity {
			out = append(out, id)
		}
	}
	sort.Strings(out)
	return out
}

// syncing returns the slots whose syncs may be under way: held, or being taken.
func (c *Coordinator) syncing() hashslot.Set {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.held | c.target
}

// narrow stops syncing the slots outside keep: their writes at once (Allows), their syncs once
// the holder has told Hold.
func (c *Coordinator) narrow(ctx context.Context, keep hashslot.Set) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.allowed.Store(uint64(hashslot.Set(c.allowed.Load()) & keep))
	if c.target&^keep == 0 {
		return
	}
	klog.FromContext(ctx).V(2).Info("Giving up shard slots", "slots", (c.target &^ keep).String())
	c.target &= keep
	signal(c.wake)
}

// stopAll stops syncing every slot, as after a lapse: the slots are taken again only through a
// table read anew.
func (c *Coordinator) stopAll(ctx context.Context) {
	if c.syncing() != 0 {
		klog.FromContext(ctx).Info("Shard Lease not renewed for the renew deadline: stopping every slot until it is", "renewDeadline", c.o.RenewDeadline)
	}
	c.narrow(ctx, 0)
	c.mu.Lock()
	c.fresh = true
	c.mu.Unlock()
}

// widen starts syncing the slots of add, which the table gives this replica now.
func (c *Coordinator) widen(add hashslot.Set) {
	if c.lapsed() {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.target |= add
	c.allowed.Store(uint64(hashslot.Set(c.allowed.Load()) | add))
	signal(c.wake)
}

// holdEvery tells Hold the target slots each time they change, off the step loop: giving up a
// slot waits for its syncs under way, which must hold up neither the renewals nor the other
// slots. Once Hold returns, the step loop frees the slots given up and the Lease says so.
func (c *Coordinator) holdEvery(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-c.wake:
		}
		c.mu.Lock()
		target, held := c.target, c.held
		c.mu.Unlock()
		if target == held {
			continue
		}
		klog.FromContext(ctx).Info("Shard slots", "slots", target.String(), "count", target.Count())
		c.hold(ctx, target)
		c.mu.Lock()
		c.held = target
		c.mu.Unlock()
		c.poke()
		signal(c.readvertise)
	}
}

// Assign returns the slots of identity among members (sorted): the i-th member of n holds the
// slots [i*Slots/n, (i+1)*Slots/n). Every replica computes the same from the same members.
func Assign(members []string, identity string) hashslot.Set {
	i := sort.SearchStrings(members, identity)
	if i == len(members) || members[i] != identity {
		return 0
	}
	n := len(members)
	return hashslot.SetOf(hashslot.Range{From: i * hashslot.Count / n, To: (i + 1) * hashslot.Count / n})
}

// Reports returns what each live replica reported at its last renewal, by identity.
func (c *Coordinator) Reports() map[string]string {
	out := map[string]string{}
	for id, s := range c.peers.live() {
		out[id] = s.report
	}
	return out
}

// leave stops syncing, gives this replica's slots back and deletes its Lease. The holder has
// stopped.
func (c *Coordinator) leave(ctx context.Context) {
	c.narrow(ctx, 0)
	if c.Held() != 0 {
		c.hold(ctx, 0)
		c.mu.Lock()
		c.held = 0
		c.mu.Unlock()
	}
	if t, err := c.readTable(ctx, true); err == nil && t.whole {
		err = c.release(ctx, &t, 0)
		if err != nil {
			klog.FromContext(ctx).Error(err, "Cannot give the shard slots back; they move once this replica's Lease expires")
		}
	}
	c.sayLeaving(ctx)
	c.deleteLease(ctx)
}

// sayLeaving renews this replica's Lease one last time, syncing nothing, for a second: the others
// count it out then, and take its slots at once, where its deletion alone (no proof that a
// replica stopped: anyone may delete a Lease) would wait out the Lease's duration.
func (c *Coordinator) sayLeaving(ctx context.Context) {
	c.leaseMu.Lock()
	defer c.leaseMu.Unlock()
	if _, err := c.writeLease(ctx, metav1.NewMicroTime(c.o.Clock.Now()), 0, time.Second); err != nil {
		klog.FromContext(ctx).Error(err, "Cannot say this replica leaves; its slots move once its Lease expires")
	}
}
