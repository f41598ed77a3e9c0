package priorityqueue

import (
	"slices"
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
