package priorityqueue

import (
	"runtime"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"k8s.io/client-go/util/workqueue"
)

// step is one act on a workqueue: an add at a level, or a worker taking a key (get) or being
// done with it (done).
type step struct {
	act string // "high", "low", "get", "done"
	key string
}

func TestTheWorkqueueHandsOutKeysByPriority(t *testing.T) {
	tests := []struct {
		name  string
		steps []step
		// want is the order in which the keys waiting after steps are handed out
		want []string
	}{{
		name:  "a key asked for at high is handed out before the keys waiting at low",
		steps: []step{{"low", "a"}, {"low", "b"}, {"high", "edit"}, {"low", "c"}},
		want:  []string{"edit", "a", "b", "c"},
	}, {
		name:  "keys at one level are handed out first in, first out",
		steps: []step{{"high", "x"}, {"low", "a"}, {"high", "y"}, {"low", "b"}, {"high", "z"}},
		want:  []string{"x", "y", "z", "a", "b"},
	}, {
		name:  "an add at high of a key waiting at low raises it, once",
		steps: []step{{"low", "a"}, {"low", "b"}, {"low", "c"}, {"high", "b"}, {"high", "b"}},
		want:  []string{"b", "a", "c"},
	}, {
		name:  "an add at low of a key waiting at high leaves it high",
		steps: []step{{"low", "a"}, {"high", "b"}, {"low", "b"}},
		want:  []string{"b", "a"},
	}, {
		name:  "a key asked for at low while a worker has it is queued again at low when the worker is done",
		steps: []step{{"high", "a"}, {"get", "a"}, {"low", "b"}, {"low", "a"}, {"high", "c"}, {"done", "a"}},
		want:  []string{"c", "b", "a"},
	}, {
		name:  "a key asked for at high while a worker has it stays high, whatever is asked after",
		steps: []step{{"high", "a"}, {"get", "a"}, {"low", "b"}, {"high", "a"}, {"low", "a"}, {"done", "a"}},
		want:  []string{"a", "b"},
	}, {
		name:  "a key handed out and asked for again waits at the level asked, not where it was",
		steps: []step{{"low", "a"}, {"high", "a"}, {"get", "a"}, {"done", "a"}, {"low", "b"}, {"low", "a"}},
		want:  []string{"b", "a"},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			q := NewWorkqueue[string]("", workqueue.DefaultTypedControllerRateLimiter[string]())
			defer q.ShutDown()
			for _, s := range tt.steps {
				switch s.act {
				case "high":
					q.Add(s.key)
				case "low":
					q.AddLow(s.key)
				case "get":
					if got, _ := q.Get(); got != s.key {
						t.Fatalf("a worker took %q, want %q", got, s.key)
					}
				case "done":
					q.Done(s.key)
				}
			}
			if q.Len() != len(tt.want) {
				t.Errorf("Len() = %d, want %d", q.Len(), len(tt.want))
			}
			var got []string
			for q.Len() > 0 {
				key, _ := q.Get()
				got = append(got, key)
				q.Done(key)
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("handed out %q, want %q", got, tt.want)
			}
		})
	}
}

// The workqueue's own adds (after a delay, a rate limit, or none: AddAfter with no delay) make
// no announcement, and are high.
func TestAnAddTheWorkqueueMakesItselfRaisesAKeyWaitingAtLow(t *testing.T) {
	q := NewWorkqueue[string]("", workqueue.DefaultTypedControllerRateLimiter[string]())
	defer q.ShutDown()
	q.AddLow("a")
	q.AddLow("b")
	q.AddAfter("b", 0)
	if got, _ := q.Get(); got != "b" {
		t.Errorf("a worker took %q first, want the key added again by the workqueue", got)
	}
}

// A key raised leaves its entry at low behind; while keys at high keep coming, Pop does not
// reach those entries, so they are taken out once many. Drained, the queue holds nothing.
func TestRaisedKeysLeaveNothingBehind(t *testing.T) {
	q := NewWorkqueue[string]("", workqueue.DefaultTypedControllerRateLimiter[string]())
	defer q.ShutDown()
	const n = 3 * compactAt
	for i := range n {
		q.AddLow(strconv.Itoa(i))
	}
	for i := range n - 10 {
		q.Add(strconv.Itoa(i)) // raised: its entry at low is stale
	}
	if entries, live := q.order.low.Len(), 10; entries > live+compactAt {
		t.Errorf("%d entries at low for %d keys waiting there, want at most %d", entries, live, live+compactAt)
	}
	for q.Len() > 0 {
		key, _ := q.Get()
		q.Done(key)
	}
	o := q.order
	if o.high.Len() != 0 || o.low.Len() != 0 || len(o.queued) != 0 || len(o.asked) != 0 || o.staleLow != 0 {
		t.Errorf("drained, the queue holds %d entries at high, %d at low (%d counted stale), %d keys queued, %d announcements",
			o.high.Len(), o.low.Len(), o.staleLow, len(o.queued), len(o.asked))
	}
}

// Adds at both levels and the workqueue's own, and workers, all at once: no key is with two workers,
// every key is handed out after its last add, and the queue is empty at the end. Run with -race.
func TestConcurrentAddsAndWorkersKeepTheWorkqueuesPromises(t *testing.T) {
	q := NewWorkqueue[string]("", workqueue.DefaultTypedControllerRateLimiter[string]())
	defer q.ShutDown()
	const keys, adders, adds, workers = 40, 4, 3000, 4
	var (
		seq           atomic.Int64
		mu            sync.Mutex
		held          = map[string]bool{}
		lastAdd       = map[string]int64{}
		lastGet       = map[string]int64{}
		errs          []string
		adding, doing sync.WaitGroup
	)
	for a := range adders {
		adding.Go(func() {
			for i := range adds {
				key := strconv.Itoa((a*7 + i*13) % keys)
				mu.Lock()
				lastAdd[key] = seq.Add(1)
				mu.Unlock()
				switch i % 4 {
				case 0:
					q.Add(key)
				case 1, 2:
					q.AddLow(key)
				default:
					q.AddAfter(key, 0) // the workqueue's own add
				}
			}
		})
	}
	for range workers {
		doing.Go(func() {
			for {
				key, shutdown := q.Get()
				if shutdown {
					return
				}
				mu.Lock()
				if held[key] {
					errs = append(errs, key+" handed to two workers at once")
				}
				held[key], lastGet[key] = true, seq.Add(1)
				mu.Unlock()
				runtime.Gosched() // the sync: another worker may run meanwhile
				mu.Lock()
				delete(held, key)
				mu.Unlock()
				q.Forget(key)
				q.Done(key)
			}
		})
	}
	adding.Wait()
	deadline := time.Now().Add(30 * time.Second)
	for q.Len() > 0 {
		if time.Now().After(deadline) {
			t.Fatalf("%d keys still queued after 30 s", q.Len())
		}
		time.Sleep(time.Millisecond) // polls the workers' progress, with a deadline
	}
	q.ShutDownWithDrain()
	doing.Wait()
	for _, e := range errs {
		t.Error(e)
	}
	for key, added := range lastAdd {
		if lastGet[key] < added {
			t.Errorf("key %s: last added at %d, last handed out at %d", key, added, lastGet[key])
		}
	}
}

func TestAKeyAddedAfterADelayIsHigh(t *testing.T) {
	q := NewWorkqueue[string]("", workqueue.DefaultTypedControllerRateLimiter[string]())
	defer q.ShutDown()
	q.AddLow("resync")
	q.AddAfter("retry", time.Millisecond)
	deadline := time.Now().Add(10 * time.Second)
	for q.Len() < 2 && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond) // polls the delayed add's arrival, with a deadline
	}
	if got, _ := q.Get(); got != "retry" {
		t.Errorf("a worker took %q first, want the delayed key", got)
	}
}

func TestAWorkerNeverHasAKeyAnotherWorkerHas(t *testing.T) {
	q := NewWorkqueue[string]("", workqueue.DefaultTypedControllerRateLimiter[string]())
	defer q.ShutDown()
	q.AddLow("a")
	key, _ := q.Get()
	q.Add("a") // raised while a worker has it: queued again only when that worker is done
	if q.Len() != 0 {
		t.Fatalf("Len() = %d while the only key is with a worker, want 0", q.Len())
	}
	q.Done(key)
	if q.Len() != 1 {
		t.Fatalf("Len() = %d after the worker is done, want 1", q.Len())
	}
}

// A Go map keeps the room of its most entries: a queue that held every parent at once (a
// resync, a start) and was then drained must not keep that room for the life of the process.
func TestADrainedQueueKeepsNothingOfItsPeak(t *testing.T) {
	const n = 100_000
	q := NewQueue[string]()
	keys := make([]string, n)
	for i := range keys {
		keys[i] = strconv.Itoa(i)
	}
	before := heapInUse()
	for i, key := range keys {
		q.ask(key, []level{high, low}[i%2])
	}
	for _, key := range keys {
		q.Push(key)
	}
	for q.Len() > 0 {
		q.Pop()
	}
	if kept := heapInUse() - before; kept > 256<<10 {
		t.Errorf("drained after %d keys, the queue keeps %d KB, want at most 256", n, kept>>10)
	}
	runtime.KeepAlive(keys)
	runtime.KeepAlive(q)
}

// heapInUse is the heap in use after a collection.
func heapInUse() int64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return int64(m.HeapAlloc)
}
