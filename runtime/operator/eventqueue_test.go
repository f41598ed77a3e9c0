package operator

import (
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/util/flowcontrol"
)

// recorded is an events.EventRecorder that keeps what it is given.
type recorded struct {
	mu  sync.Mutex
	got []string
}

func (r *recorded) Eventf(_, _ runtime.Object, eventtype, reason, _, note string, args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.got = append(r.got, eventtype+" "+reason+": "+fmt.Sprintf(note, args...))
}

func (r *recorded) events() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.got...)
}

// A burst of events never blocks the caller nor piles up: past the queue's bound, events are
// dropped and counted, and Warning ones, which have their own share, go first.
func TestABurstOfEventsIsBoundedAndWarningsGoFirst(t *testing.T) {
	next := &recorded{}
	q := newEventQueue(next, 3, prometheus.NewRegistry())
	done := make(chan struct{})
	go func() { // the caller never blocks, even with nothing sending
		defer close(done)
		for i := range 5 {
			q.Eventf(nil, nil, "Normal", "Created", "Create", "Created Pod %d", i)
		}
		q.Eventf(nil, nil, "Warning", "ApplyFailed", "Sync", "failed")
	}()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("Eventf blocked")
	}
	if n := testutil.ToFloat64(q.dropped.WithLabelValues("Normal")); n != 2 {
		t.Errorf("%v Normal events dropped, want 2 (5 for a queue of 3)", n)
	}
	if n := testutil.ToFloat64(q.dropped.WithLabelValues("Warning")); n != 0 {
		t.Errorf("%v Warning events dropped, want none", n)
	}

	go q.run(t.Context(), flowcontrol.NewFakeAlwaysRateLimiter())
	deadline := time.Now().Add(10 * time.Second)
	for len(next.events()) < 4 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond) // polling the fake recorder, with a deadline
	}
	want := "Warning ApplyFailed: failed,Normal Created: Created Pod 0,Normal Created: Created Pod 1,Normal Created: Created Pod 2"
	if got := strings.Join(next.events(), ","); got != want {
		t.Errorf("sent %s\nwant %s", got, want)
	}
}
