package shard

import (
	"context"
	"encoding/json"
	"sort"

	"metacel.dev/metacel/runtime/hashslot"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"

	"metacel.dev/metacel/runtime/apistore"
	"metacel.dev/metacel/runtime/contract"
)

// The slot table: one owner per slot, in the ConfigMap TableName, changed only by
// compare-and-swap on the version read. A table that is missing or cannot be read whole (deleted,
// hand-edited) is not "every slot free": it is rebuilt from what the live replicas' Leases say
// they sync, and each holder writes back the slots it syncs that the table does not give it.

// ownersTable is the table as read.
type ownersTable struct {
	owners []string          // by slot; "" is free
	cm     *corev1.ConfigMap // as read; nil when there is none
	whole  bool              // false: missing or unreadable, to be rebuilt
}

// readTable returns the table as the informer holds it or, fresh, as the API server does.
func (c *Coordinator) readTable(ctx context.Context, fresh bool) (ownersTable, error) {
	if !fresh {
		obj, ok, _ := c.tables.GetByKey(c.o.Namespace + "/" + TableName)
		if !ok {
			return parseTable(nil), nil
		}
		return parseTable(obj.(*corev1.ConfigMap)), nil
	}
	ctx, cancel := context.WithTimeout(ctx, requestTimeout)
	defer cancel()
	cm, err := apistore.Get(ctx, c.client.CoreV1().ConfigMaps(c.o.Namespace), TableName)
	if err != nil {
		return ownersTable{}, err
	}
	return parseTable(cm), nil
}

func parseTable(cm *corev1.ConfigMap) ownersTable {
	t := ownersTable{owners: make([]string, hashslot.Count), cm: cm}
	if cm == nil {
		return t
	}
	var got []string
	if err := json.Unmarshal([]byte(cm.Data[keyOwners]), &got); err == nil && len(got) == hashslot.Count {
		copy(t.owners, got)
		t.whole = true
	}
	return t
}

// repair writes back a table that is not whole, rebuilt from the live replicas' Leases, and the
// slots this replica syncs that the table leaves free.
func (c *Coordinator) repair(ctx context.Context, t *ownersTable, live map[string]sighting) error {
	changed := !t.whole
	if !t.whole {
		klog.FromContext(ctx).Info("The shard table is missing or unreadable; rebuilding it from the replicas' Leases")
		t.owners = rebuilt(live)
	}
	for slot := range hashslot.Count {
		if c.syncing().Has(slot) && t.owners[slot] == "" {
			t.owners[slot], changed = c.o.Identity, true
		}
	}
	if !changed {
		return nil
	}
	return c.writeTable(ctx, t)
}

// rebuilt gives each slot to the live replica whose Lease says it syncs it (the first by identity,
// should two say so: the other stops on reading the table).
func rebuilt(live map[string]sighting) []string {
	owners := make([]string, hashslot.Count)
	ids := make([]string, 0, len(live))
	for id := range live {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	for _, id := range ids {
		for slot := range hashslot.Count {
			if live[id].slots.Has(slot) && owners[slot] == "" {
				owners[slot] = id
			}
		}
	}
	return owners
}

// release writes "no owner" for the slots the table gives this replica that it syncs no more
// and should not hold (want): their syncs have stopped.
func (c *Coordinator) release(ctx context.Context, t *ownersTable, want hashslot.Set) error {
	syncing, changed := c.syncing(), false
	for slot := range hashslot.Count {
		if t.owners[slot] == c.o.Identity && !syncing.Has(slot) && !want.Has(slot) {
			t.owners[slot], changed = "", true
		}
	}
	if !changed {
		return nil
	}
	return c.writeTable(ctx, t)
}

// claim takes the slots this replica should hold and may: free, its own, or their owner gone
// (ownerGone), and said by no other live replica's Lease to be synced. The table is written
// first, then this replica's Lease says it syncs them, then they are synced.
func (c *Coordinator) claim(ctx context.Context, t *ownersTable, want hashslot.Set, live map[string]sighting) error {
	gone := map[string]bool{}
	syncing, take := c.syncing(), hashslot.Set(0)
	for slot := range hashslot.Count {
		if !want.Has(slot) || syncing.Has(slot) || syncedByOther(live, c.o.Identity, slot) {
			continue
		}
		owner := t.owners[slot]
		if _, judged := gone[owner]; !judged && owner != "" && owner != c.o.Identity {
			gone[owner] = c.ownerGone(ctx, owner)
		}
		if owner == c.o.Identity || owner == "" || gone[owner] {
			t.owners[slot] = c.o.Identity
			take |= 1 << slot
		}
	}
	if take == 0 {
		return nil
	}
	// what the others judge this replica's liveness by: its last renewal, or, never renewed, now
	alive := c.lastRenewed()
	if alive.IsZero() {
		alive = c.o.Clock.Now()
	}
	// written even when the table already names this replica: the write is on the version read,
	// so a table read stale (an informer behind) is refused rather than trusted
	if err := c.writeTable(ctx, t); err != nil {
		return err
	}
	if err := c.renew(ctx, take); err != nil {
		return err // the table names this replica: the next step takes them again
	}
	if c.lapsedSince(alive) {
		// the claim outlasted the renew deadline (a hung request, a pause): another replica may
		// have judged this one gone and taken the slots meanwhile; the next step reads the table anew
		return nil
	}
	c.widen(take)
	return nil
}

// syncedByOther reports whether a live replica other than self says it syncs slot.
func syncedByOther(live map[string]sighting, self string, slot int) bool {
	for id, s := range live {
		if id != self && s.slots.Has(slot) {
			return true
		}
	}
	return false
}

// ownerGone reports whether a replica the table names as an owner has stopped: this replica has
// seen no change of its Lease for the Lease's duration. The Lease is read from the API server
// first (an informer behind may not show the renewal that keeps it alive), and a Lease never
// seen, not even gone, counts from now.
func (c *Coordinator) ownerGone(ctx context.Context, owner string) bool {
	if expired, known := c.peers.expired(owner); known && !expired {
		return false
	}
	ctx, cancel := context.WithTimeout(ctx, requestTimeout)
	defer cancel()
	lease, err := apistore.Get(ctx, c.client.CoordinationV1().Leases(c.o.Namespace), LeaseName(owner))
	switch {
	case err != nil:
		klog.FromContext(ctx).Error(err, "Cannot read a shard owner's Lease; its slots stay its own for now", "owner", owner)
		return false
	case lease == nil:
		c.peers.absent(owner, c.o.LeaseDuration)
	default:
		c.peers.see(lease)
	}
	expired, _ := c.peers.expired(owner)
	return expired
}

// takenByOthers returns the slots the table gives to another replica.
func takenByOthers(owners []string, identity string) hashslot.Set {
	var out hashslot.Set
	for slot, owner := range owners {
		if owner != "" && owner != identity {
			out |= 1 << slot
		}
	}
	return out
}

// writeTable writes the owners, on the version read (compare-and-swap): a conflict means someone
// else changed the table first, and the step is done again on what they wrote. t then holds what
// was written.
func (c *Coordinator) writeTable(ctx context.Context, t *ownersTable) error {
	body, err := json.Marshal(t.owners)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, requestTimeout)
	defer cancel()
	fresh := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: TableName, Namespace: c.o.Namespace,
		Labels: map[string]string{contract.LabelShardTable: "true", contract.LabelManagedBy: contract.ManagedByValue}}}
	written, err := apistore.Write(ctx, c.client.CoreV1().ConfigMaps(c.o.Namespace), fieldManager, t.cm, fresh, func(cm *corev1.ConfigMap) bool {
		if cm.Data == nil {
			cm.Data = map[string]string{}
		}
		cm.Data[keyOwners] = string(body)
		return true // written even when unchanged: claim's compare-and-swap
	})
	if err != nil {
		return err
	}
	t.cm, t.whole = written, true
	return nil
}
