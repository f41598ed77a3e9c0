package shard

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
)

// Names and labels in the API server.
const (
	// LabelMember marks the Leases of the replicas.
	LabelMember = "metacel.dev/shard-member"
	// AnnotationSlots shows, on a replica's Lease, the slots it syncs now (e.g. "0-20").
	AnnotationSlots = "metacel.dev/shard-slots"
	// AnnotationReport holds, on a replica's Lease, what Options.Report gave at its last renewal.
	AnnotationReport = "metacel.dev/shard-report"
	// TableName is the ConfigMap holding the owner of each slot, labelled LabelTable.
	TableName    = "metacel-shards"
	LabelTable   = "metacel.dev/shard-table"
	keyOwners    = "owners"
	leasePrefix  = "metacel-shard-"
	fieldManager = "metacel"
	// requestTimeout bounds each request.
	requestTimeout = 10 * time.Second
)

// Options configure a Coordinator.
type Options struct {
	// Namespace holds the Leases and the table.
	Namespace string
	// Identity names this replica; unique among the replicas.
	Identity string
	// LeaseDuration is how long a replica's Lease stays valid after its last renewal; others take
	// its slots once it has passed. RenewDeadline (< LeaseDuration) is how long a replica goes on
	// syncing without renewing. RenewInterval is how often it renews.
	LeaseDuration, RenewDeadline, RenewInterval time.Duration
	Clock                                       clock.WithTicker
	// Report, when set, gives what this replica tells the others at each renewal of its Lease
	// (Reports): e.g. how many parents it holds.
	Report func() string
}

// Hold is told the slots this replica may sync now; when it returns, the syncs of the slots it
// no longer holds have stopped.
type Hold func(ctx context.Context, slots Set)

// Coordinator takes and gives up slots for this replica (see the package doc).
type Coordinator struct {
	client kubernetes.Interface
	o      Options
	hold   Hold

	leases    cache.Indexer
	tables    cache.Indexer
	kick      chan struct{}
	lease     *coordinationv1.Lease // as last written
	renewedAt time.Time

	mu   sync.Mutex
	held Set
}

// New returns the coordinator of one replica.
func New(client kubernetes.Interface, o Options, hold Hold) *Coordinator {
	if o.Clock == nil {
		o.Clock = clock.RealClock{}
	}
	return &Coordinator{client: client, o: o, hold: hold, kick: make(chan struct{}, 1)}
}

// LeaseName is the name of a replica's Lease.
func LeaseName(identity string) string {
	name := strings.ToLower(leasePrefix + identity)
	if errs := validation.IsDNS1123Subdomain(name); len(errs) > 0 {
		name = leasePrefix + fmt.Sprintf("%x", Hash(types.UID(identity)))
	}
	return name
}

// Held returns the slots this replica syncs now.
func (c *Coordinator) Held() Set {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.held
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
	tick := c.o.Clock.NewTicker(time.Second)
	defer tick.Stop()
	for {
		c.step(ctx)
		select {
		case <-ctx.Done():
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
		informers.WithTweakListOptions(func(o *metav1.ListOptions) { o.LabelSelector = LabelMember + "=true" }))
	tables := informers.NewSharedInformerFactoryWithOptions(c.client, 0, informers.WithNamespace(c.o.Namespace),
		informers.WithTweakListOptions(func(o *metav1.ListOptions) { o.LabelSelector = LabelTable + "=true" }))
	li, ti := leases.Coordination().V1().Leases().Informer(), tables.Core().V1().ConfigMaps().Informer()
	kick := cache.ResourceEventHandlerFuncs{
		AddFunc:    func(any) { c.poke() },
		UpdateFunc: func(any, any) { c.poke() },
		DeleteFunc: func(any) { c.poke() },
	}
	for _, inf := range []cache.SharedIndexInformer{li, ti} {
		if _, err := inf.AddEventHandler(kick); err != nil {
			return err
		}
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

func (c *Coordinator) poke() {
	select {
	case c.kick <- struct{}{}:
	default:
	}
}

// step renews this replica's Lease, then gives up the slots it should no longer hold and takes
// those it should and may.
func (c *Coordinator) step(ctx context.Context) {
	c.renewIfDue(ctx)
	if c.o.Clock.Since(c.renewedAt) > c.o.RenewDeadline {
		c.setHeld(ctx, 0) // others may take our slots soon: stop before they can
		return
	}
	live := c.liveMembers()
	want := Assign(live, c.o.Identity)
	table, cm := c.table()
	c.setHeld(ctx, c.Held()&want&^takenByOthers(table, c.o.Identity))
	if err := c.release(ctx, table, cm, want); err != nil {
		c.retry(ctx, err)
		return
	}
	if err := c.claim(ctx, table, cm, want, live); err != nil {
		c.retry(ctx, err)
	}
}

func (c *Coordinator) retry(ctx context.Context, err error) {
	if apierrors.IsConflict(err) || apierrors.IsAlreadyExists(err) {
		klog.FromContext(ctx).V(2).Info("Shard table changed meanwhile; reading it again", "err", err)
		c.poke()
		return
	}
	klog.FromContext(ctx).Error(err, "Cannot update the shard table; will retry")
}

// setHeld tells the hold callback the slots to sync, when they change, and records them.
func (c *Coordinator) setHeld(ctx context.Context, s Set) {
	if s == c.Held() {
		return
	}
	klog.FromContext(ctx).Info("Shard slots", "slots", s.String(), "count", s.Count())
	c.hold(ctx, s)
	c.mu.Lock()
	c.held = s
	c.mu.Unlock()
}

// release writes "no owner" for the slots the table gives this replica that it does not hold
// (it stopped syncing them in step).
func (c *Coordinator) release(ctx context.Context, table []string, cm *corev1.ConfigMap, want Set) error {
	held, changed := c.Held(), false
	for slot := range Slots {
		if table[slot] == c.o.Identity && !held.Has(slot) && !want.Has(slot) {
			table[slot], changed = "", true
		}
	}
	if !changed {
		return nil
	}
	return c.writeTable(ctx, table, cm)
}

// claim takes the slots this replica should hold and may: free, its own, or their owner gone
// (ownerGone). The table is written first, then the slots are synced.
func (c *Coordinator) claim(ctx context.Context, table []string, cm *corev1.ConfigMap, want Set, live []string) error {
	gone := map[string]bool{} // by owner: alive (false) or, when not among live, as ownerGone says
	for _, m := range live {
		gone[m] = false
	}
	held, take := c.Held(), Set(0)
	for slot := range Slots {
		if !want.Has(slot) || held.Has(slot) {
			continue
		}
		owner := table[slot]
		if _, known := gone[owner]; !known && owner != "" && owner != c.o.Identity {
			gone[owner] = c.ownerGone(ctx, owner)
		}
		if owner == c.o.Identity || owner == "" || gone[owner] {
			table[slot] = c.o.Identity
			take |= 1 << slot
		}
	}
	if take == 0 {
		return nil
	}
	// written even when the table already names this replica: the write is on the version read,
	// so a table read stale (an informer behind) is refused rather than trusted
	if err := c.writeTable(ctx, table, cm); err != nil {
		return err
	}
	c.setHeld(ctx, held|take)
	return nil
}

// ownerGone reports whether a replica the table names as an owner, and that is not among the
// live members this replica's informer shows, has stopped: its Lease expired, or deleted. A
// Lease the informer has not seen (a replica that has just started, an informer behind) is read
// from the API server: a Lease not seen yet is no proof of a replica gone, and taking the slots
// of one that syncs them has two replicas sync the same parents.
func (c *Coordinator) ownerGone(ctx context.Context, owner string) bool {
	now := c.o.Clock.Now()
	if obj, ok, _ := c.leases.GetByKey(c.o.Namespace + "/" + LeaseName(owner)); ok {
		return expired(obj.(*coordinationv1.Lease), now)
	}
	ctx, cancel := context.WithTimeout(ctx, requestTimeout)
	defer cancel()
	lease, err := c.client.CoordinationV1().Leases(c.o.Namespace).Get(ctx, LeaseName(owner), metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		return true
	case err != nil:
		klog.FromContext(ctx).Error(err, "Cannot read a shard owner's Lease; its slots stay its own for now", "owner", owner)
		return false
	}
	return expired(lease, now)
}

// takenByOthers returns the slots the table gives to another replica.
func takenByOthers(table []string, identity string) Set {
	var out Set
	for slot, owner := range table {
		if owner != "" && owner != identity {
			out |= 1 << slot
		}
	}
	return out
}

// table returns the owners of the slots as the informer last saw them, and the ConfigMap (nil
// when there is none yet).
func (c *Coordinator) table() ([]string, *corev1.ConfigMap) {
	owners := make([]string, Slots)
	obj, ok, _ := c.tables.GetByKey(c.o.Namespace + "/" + TableName)
	if !ok {
		return owners, nil
	}
	cm := obj.(*corev1.ConfigMap)
	var got []string
	if err := json.Unmarshal([]byte(cm.Data[keyOwners]), &got); err == nil && len(got) == Slots {
		copy(owners, got)
	}
	return owners, cm
}

// writeTable writes the owners, on the version read (compare-and-swap): a conflict means someone
// else changed the table first, and the step is done again on what they wrote.
func (c *Coordinator) writeTable(ctx context.Context, owners []string, read *corev1.ConfigMap) error {
	body, err := json.Marshal(owners)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, requestTimeout)
	defer cancel()
	cms := c.client.CoreV1().ConfigMaps(c.o.Namespace)
	if read == nil {
		cm := &corev1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{Name: TableName, Namespace: c.o.Namespace, Labels: map[string]string{LabelTable: "true", "app.kubernetes.io/managed-by": "metacel"}},
			Data:       map[string]string{keyOwners: string(body)},
		}
		_, err = cms.Create(ctx, cm, metav1.CreateOptions{FieldManager: fieldManager})
		return err
	}
	cm := read.DeepCopy()
	if cm.Data == nil {
		cm.Data = map[string]string{}
	}
	cm.Data[keyOwners] = string(body)
	_, err = cms.Update(ctx, cm, metav1.UpdateOptions{FieldManager: fieldManager})
	return err
}

// liveMembers returns the identities of the replicas whose Leases have not expired, sorted;
// this replica is one of them while its own Lease is renewed (step stops it otherwise).
func (c *Coordinator) liveMembers() []string {
	now := c.o.Clock.Now()
	live := map[string]bool{}
	if c.lease != nil {
		live[c.o.Identity] = true // renewed just now, whether the informer saw it yet or not
	}
	objs, _ := c.leases.ByIndex(cache.NamespaceIndex, c.o.Namespace)
	for _, obj := range objs {
		l := obj.(*coordinationv1.Lease)
		if l.Spec.HolderIdentity != nil && !expired(l, now) {
			live[*l.Spec.HolderIdentity] = true
		}
	}
	out := make([]string, 0, len(live))
	for id := range live {
		out = append(out, id)
	}
	sort.Strings(out)
	return out
}

func expired(l *coordinationv1.Lease, now time.Time) bool {
	if l.Spec.RenewTime == nil || l.Spec.LeaseDurationSeconds == nil {
		return true
	}
	return !now.Before(l.Spec.RenewTime.Add(time.Duration(*l.Spec.LeaseDurationSeconds) * time.Second))
}

// Assign returns the slots of identity among members (sorted): the i-th member of n holds the
// slots [i*Slots/n, (i+1)*Slots/n). Every replica computes the same from the same members.
func Assign(members []string, identity string) Set {
	i := sort.SearchStrings(members, identity)
	if i == len(members) || members[i] != identity {
		return 0
	}
	n := len(members)
	return SetOf(Range{From: i * Slots / n, To: (i + 1) * Slots / n})
}

// renewIfDue renews this replica's Lease every RenewInterval, with the slots it holds.
func (c *Coordinator) renewIfDue(ctx context.Context) {
	slots := c.Held().String()
	if c.lease != nil && c.o.Clock.Since(c.renewedAt) < c.o.RenewInterval && c.lease.Annotations[AnnotationSlots] == slots {
		return
	}
	now := metav1.NewMicroTime(c.o.Clock.Now())
	lease, err := c.writeLease(ctx, now, slots)
	if err != nil {
		c.lease = nil // read it again next time
		klog.FromContext(ctx).Error(err, "Cannot renew this replica's shard Lease")
		return
	}
	c.lease, c.renewedAt = lease, now.Time
}

func (c *Coordinator) writeLease(ctx context.Context, now metav1.MicroTime, slots string) (*coordinationv1.Lease, error) {
	ctx, cancel := context.WithTimeout(ctx, requestTimeout)
	defer cancel()
	leases := c.client.CoordinationV1().Leases(c.o.Namespace)
	lease := c.lease
	if lease == nil {
		got, err := leases.Get(ctx, LeaseName(c.o.Identity), metav1.GetOptions{})
		switch {
		case apierrors.IsNotFound(err):
			return leases.Create(ctx, c.newLease(now, slots), metav1.CreateOptions{FieldManager: fieldManager})
		case err != nil:
			return nil, err
		}
		lease = got
	}
	lease = lease.DeepCopy()
	seconds := int32(c.o.LeaseDuration / time.Second)
	lease.Spec.HolderIdentity, lease.Spec.LeaseDurationSeconds, lease.Spec.RenewTime = &c.o.Identity, &seconds, &now
	if lease.Annotations == nil {
		lease.Annotations = map[string]string{}
	}
	lease.Annotations[AnnotationSlots] = slots
	c.setReport(lease.Annotations)
	return leases.Update(ctx, lease, metav1.UpdateOptions{FieldManager: fieldManager})
}

func (c *Coordinator) newLease(now metav1.MicroTime, slots string) *coordinationv1.Lease {
	seconds := int32(c.o.LeaseDuration / time.Second)
	lease := &coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{
			Name: LeaseName(c.o.Identity), Namespace: c.o.Namespace,
			Labels:      map[string]string{LabelMember: "true", "app.kubernetes.io/managed-by": "metacel"},
			Annotations: map[string]string{AnnotationSlots: slots},
		},
		Spec: coordinationv1.LeaseSpec{HolderIdentity: &c.o.Identity, LeaseDurationSeconds: &seconds, AcquireTime: &now, RenewTime: &now},
	}
	c.setReport(lease.Annotations)
	return lease
}

func (c *Coordinator) setReport(annotations map[string]string) {
	if c.o.Report != nil {
		annotations[AnnotationReport] = c.o.Report()
	}
}

// Reports returns what each live replica reported at its last renewal, by identity.
func (c *Coordinator) Reports() map[string]string {
	out := map[string]string{}
	c.mu.Lock()
	leases := c.leases
	c.mu.Unlock()
	if leases == nil {
		return out
	}
	now := c.o.Clock.Now()
	objs, _ := leases.ByIndex(cache.NamespaceIndex, c.o.Namespace)
	for _, obj := range objs {
		l := obj.(*coordinationv1.Lease)
		if l.Spec.HolderIdentity != nil && !expired(l, now) {
			out[*l.Spec.HolderIdentity] = l.Annotations[AnnotationReport]
		}
	}
	return out
}

// leave stops syncing, gives this replica's slots back and deletes its Lease.
func (c *Coordinator) leave(ctx context.Context) {
	c.setHeld(ctx, 0)
	if table, cm := c.table(); cm != nil {
		if err := c.release(ctx, table, cm, 0); err != nil {
			klog.FromContext(ctx).Error(err, "Cannot give the shard slots back; they move once this replica's Lease expires")
		}
	}
	ctx, cancel := context.WithTimeout(ctx, requestTimeout)
	defer cancel()
	err := c.client.CoordinationV1().Leases(c.o.Namespace).Delete(ctx, LeaseName(c.o.Identity), metav1.DeleteOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		klog.FromContext(ctx).Error(err, "Cannot delete this replica's shard Lease; it expires")
	}
}
