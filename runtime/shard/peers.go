package shard

import (
	"strconv"
	"sync"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	"k8s.io/utils/clock"

	"metacel.dev/metacel/runtime/contract"
	"metacel.dev/metacel/runtime/hashslot"
)

// peers is what this replica has seen of the replicas' Leases, its own included: for each
// identity, the last record seen and when this replica saw it change, by its own clock.
//
// A Lease's renewTime is another machine's clock: compared with ours it lets clocks a few seconds
// apart, or a replica writing a backdated time, make a live replica look dead. So, as client-go's
// leader elector does, a Lease is expired once this replica has seen no change of its record for
// the Lease duration the record advertises, counted from when it saw the last change; what the
// record says the time is plays no part. A Lease seen for the first time counts as just renewed,
// and a Lease that vanishes (deleted, by its replica leaving or by anyone) is expired only once
// that duration has passed since it was last seen to change: a deletion is no proof that its
// replica stopped.
type peers struct {
	clock clock.PassiveClock
	mu    sync.Mutex
	by    map[string]*sighting
}

// sighting is the last record seen of one replica's Lease.
type sighting struct {
	record   string // holder, renewTime, duration: a change of any is a renewal
	changed  time.Time
	duration time.Duration
	version  string       // the Lease's resourceVersion, for a deletion on that version only
	slots    hashslot.Set // the slots the replica said it syncs (contract.AnnotationShardSlots)
	report   string
	gone     bool // the Lease was deleted since
}

func newPeers(clk clock.PassiveClock) *peers {
	return &peers{clock: clk, by: map[string]*sighting{}}
}

// see records a Lease as read now (from the informer or the API server).
func (p *peers) see(l *coordinationv1.Lease) {
	if l.Spec.HolderIdentity == nil {
		return
	}
	id, record := *l.Spec.HolderIdentity, recordOf(l)
	slots, _ := hashslot.ParseSet(l.Annotations[contract.AnnotationShardSlots])
	p.mu.Lock()
	defer p.mu.Unlock()
	s, ok := p.by[id]
	if !ok || s.record != record || s.gone {
		s = &sighting{record: record, changed: p.clock.Now()}
		p.by[id] = s
	}
	s.duration, s.slots, s.report, s.version = advertised(l), slots, l.Annotations[contract.AnnotationShardReport], l.ResourceVersion
}

// vanished records that a replica's Lease is gone from the API server: it expires as it would
// have, had it stayed unrenewed.
func (p *peers) vanished(l *coordinationv1.Lease) {
	if l.Spec.HolderIdentity == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if s, ok := p.by[*l.Spec.HolderIdentity]; ok {
		s.gone = true
	}
}

// absent records that a replica's Lease, never seen, is not in the API server: it counts as
// seen gone now, with duration.
func (p *peers) absent(identity string, duration time.Duration) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if _, ok := p.by[identity]; !ok {
		p.by[identity] = &sighting{changed: p.clock.Now(), duration: duration, gone: true}
	}
}

// expired reports whether the replica's Lease has not been seen to change for its duration;
// known is false when this replica has never seen it.
func (p *peers) expired(identity string) (expired, known bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	s, ok := p.by[identity]
	if !ok {
		return false, false
	}
	return p.clock.Since(s.changed) >= s.duration, true
}

// live returns the identities whose Leases have not expired, with (a copy of) what was last seen
// of each: the slots it says it syncs, what it reported; those long expired and gone are
// forgotten.
func (p *peers) live() map[string]sighting {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := map[string]sighting{}
	for id, s := range p.by {
		age := p.clock.Since(s.changed)
		switch {
		case age < s.duration:
			out[id] = *s
		case s.gone && age > 2*s.duration:
			delete(p.by, id)
		}
	}
	return out
}

// dead returns the resourceVersions of the Leases, by identity, that have not changed for twice
// their duration: their replicas are long gone (killed), and new replicas would otherwise count
// them as just renewed, for a Lease duration, each time one starts.
func (p *peers) dead() map[string]string {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := map[string]string{}
	for id, s := range p.by {
		if !s.gone && p.clock.Since(s.changed) >= 2*s.duration {
			out[id] = s.version
		}
	}
	return out
}

// recordOf is what changes at each renewal of a Lease.
func recordOf(l *coordinationv1.Lease) string {
	var renew, seconds string
	if l.Spec.RenewTime != nil {
		renew = l.Spec.RenewTime.UTC().Format(time.RFC3339Nano)
	}
	if l.Spec.LeaseDurationSeconds != nil {
		seconds = strconv.Itoa(int(*l.Spec.LeaseDurationSeconds))
	}
	return *l.Spec.HolderIdentity + "|" + renew + "|" + seconds
}

// advertised is the Lease duration a record advertises: whole seconds, as client-go writes them.
// A record without one expires at once.
func advertised(l *coordinationv1.Lease) time.Duration {
	if l.Spec.LeaseDurationSeconds == nil {
		return 0
	}
	return time.Duration(*l.Spec.LeaseDurationSeconds) * time.Second
}
