package priorityqueue

import (
	"sync"

	"k8s.io/client-go/util/workqueue"
)

// level is where a queued key waits.
type level uint8

const (
	high level = iota + 1
	low
)

// entry is one push of a key, numbered.
type entry[T comparable] struct {
	key T
	n   uint64
}

// waiting is where a queued key waits: its level, and the number of its entry there.
type waiting struct {
	lv level
	n  uint64
}

// compactAt is the number of stale entries at low from which they are taken out, when they are
// also as many as the live ones: a key raised leaves its entry at low behind, which Pop skips,
// but while keys at high keep coming Pop does not reach them.
const compactAt = 1024

// Queue is a workqueue.Queue of two levels, each first in, first out: Pop takes the oldest key
// at high, or when none waits there, the oldest at low.
//
// The workqueue calls Push, Touch, Len and Pop with its own lock held. What an add asked for is
// announced before the add, without that lock (Workqueue), so the announcements have a lock of
// their own. They are per key, not per add: two adds of one key at once may each meet the
// other's announcement. A high one always leaves the key high, so what an add at high asked for
// is never lost; at worst a key comes once more, at low.
type Queue[T comparable] struct {
	high, low workqueue.Queue[entry[T]]
	// queued is where each key waiting waits. An entry at low that is not its key's entry there
	// is stale (its key was raised; only low has stale entries), and Pop skips it.
	queued map[T]waiting
	pushes uint64
	// staleLow counts the stale entries at low
	staleLow int
	// peak is the most keys queued at once since queued was made: a Go map keeps the room of its
	// most entries, so a queue drained after a peak makes its map and levels anew (renew)
	peak int

	mu sync.Mutex
	// asked is the level the adds of a key announced that the workqueue has not yet pushed or
	// touched it for; high wins over low. No entry: high (the workqueue's own adds, after a delay
	// or a rate limit). askedPeak is its most entries since it was made, as peak.
	asked     map[T]level
	askedPeak int
}

// renewAt is the peak of keys from which a map emptied is made anew: below it, keeping the
// room costs less than making it again. (100,000 parents queued at once leave about 4 MB in a
// map's room, and as much in the levels' slices.)
const renewAt = 1024

var _ workqueue.Queue[string] = &Queue[string]{}

// NewQueue returns an empty Queue.
func NewQueue[T comparable]() *Queue[T] {
	return &Queue[T]{high: workqueue.DefaultQueue[entry[T]](), low: workqueue.DefaultQueue[entry[T]](),
		queued: map[T]waiting{}, asked: map[T]level{}}
}

// ask announces that the next add of key asks for it at lv. The workqueue pushes or touches the
// key at that add, or, when a worker has the key, when the worker is done with it; until then a
// high announcement stays over a low one.
func (q *Queue[T]) ask(key T, lv level) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.asked[key] != high {
		q.asked[key] = lv
		q.askedPeak = max(q.askedPeak, len(q.asked))
	}
}

// Push queues a key that was not waiting, at the level its adds asked for.
func (q *Queue[T]) Push(key T) {
	q.push(key, q.takeAsked(key))
}

// Touch is an add of a key that waits already: one that asked for high raises it.
func (q *Queue[T]) Touch(key T) {
	if q.takeAsked(key) == low || q.queued[key].lv != low {
		return
	}
	q.push(key, high)
	q.staleLow++ // its entry at low
	q.compactLow()
}

// push queues key at lv.
func (q *Queue[T]) push(key T, lv level) {
	q.pushes++
	e := entry[T]{key: key, n: q.pushes}
	q.queued[key] = waiting{lv: lv, n: e.n}
	q.peak = max(q.peak, len(q.queued))
	if lv == low {
		q.low.Push(e)
	} else {
		q.high.Push(e)
	}
}

// Len is the number of keys waiting.
func (q *Queue[T]) Len() int { return len(q.queued) }

// Pop takes the oldest key at high, or else the oldest at low. The workqueue calls it only
// when Len is not 0.
func (q *Queue[T]) Pop() T {
	if q.high.Len() > 0 {
		return q.taken(q.high.Pop().key)
	}
	for q.low.Len() > 0 {
		e := q.low.Pop()
		if q.live(e) {
			return q.taken(e.key)
		}
		q.staleLow--
	}
	panic("priorityqueue: Pop of an empty queue")
}

// taken forgets a key popped, and renews the queue when that empties it.
func (q *Queue[T]) taken(key T) T {
	delete(q.queued, key)
	if len(q.queued) == 0 {
		q.renew()
	}
	return key
}

// renew makes an empty queue's map and levels anew after a peak of at least renewAt keys, so
// that the room the peak took goes back to the heap: a Go map never shrinks, and client-go's
// FIFO keeps its slice's array while the slice is empty. Only stale entries can be left at low,
// and none of them is ever handed out.
func (q *Queue[T]) renew() {
	if q.peak < renewAt {
		return
	}
	q.queued, q.peak = map[T]waiting{}, 0
	q.high, q.low, q.staleLow = workqueue.DefaultQueue[entry[T]](), workqueue.DefaultQueue[entry[T]](), 0
}

// live says whether e is its key's entry.
func (q *Queue[T]) live(e entry[T]) bool { return q.queued[e.key].n == e.n }

// compactLow takes the stale entries out of low once they are many.
func (q *Queue[T]) compactLow() {
	if q.staleLow < compactAt || q.staleLow < q.low.Len()-q.staleLow {
		return
	}
	for range q.low.Len() {
		if e := q.low.Pop(); q.live(e) {
			q.low.Push(e)
		}
	}
	q.staleLow = 0
}

// takeAsked returns the level the adds of key asked for, and forgets it.
func (q *Queue[T]) takeAsked(key T) level {
	q.mu.Lock()
	defer q.mu.Unlock()
	lv, ok := q.asked[key]
	if !ok {
		return high
	}
	delete(q.asked, key)
	if len(q.asked) == 0 && q.askedPeak >= renewAt {
		q.asked, q.askedPeak = map[T]level{}, 0 // as renew does for queued
	}
	return lv
}
