package operator

import (
	"fmt"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/util/flowcontrol"
)

// recorded is an events.EventRecorder that keeps what it is given.
type recorded struct {
	mu      sync.Mutex
	got     []string
	objects []runtime.Object // regarding and related, of each event
}

func (r *recorded) Eventf(regarding, related runtime.Object, eventtype, reason, _, note string, args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.got = append(r.got, eventtype+" "+reason+": "+fmt.Sprintf(note, args...))
	r.objects = append(r.objects, regarding, related)
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
	eventually(t, 10*time.Second, "the queue to send its 4 events", func() error {
		if got := next.events(); len(got) < 4 {
			return fmt.Errorf("sent %d events: %s", len(got), strings.Join(got, ","))
		}
		return nil
	})
	want := "Warning ApplyFailed: failed,Normal Created: Created Pod 0,Normal Created: Created Pod 1,Normal Created: Created Pod 2"
	if got := strings.Join(next.events(), ","); got != want {
		t.Errorf("sent %s\nwant %s", got, want)
	}
}

// A queued event holds references, not the objects it is about: a full queue of events about
// decoded parents and rendered children would keep a thousand of each in memory.
func TestAQueuedEventHoldsReferencesNotObjects(t *testing.T) {
	next := &recorded{}
	q := newEventQueue(next, 10, prometheus.NewRegistry())
	parent := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "demo.rtfm.co.ua/v1", "kind": "MyApp",
		"metadata": map[string]any{"name": "app", "namespace": "bench", "uid": "u-1", "resourceVersion": "7"},
		"spec":     map[string]any{"image": "nginx"},
	}}
	child := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "v1", "kind": "Pod", "metadata": map[string]any{"name": "app-pod", "namespace": "bench"},
	}}
	q.Eventf(parent, child, "Normal", "Created", "Create", "Created %s", "app-pod")
	send, ok := q.take(t.Context())
	if !ok {
		t.Fatal("no event queued")
	}
	send()
	want := []runtime.Object{
		&corev1.ObjectReference{APIVersion: "demo.rtfm.co.ua/v1", Kind: "MyApp", Namespace: "bench", Name: "app", UID: "u-1", ResourceVersion: "7"},
		&corev1.ObjectReference{APIVersion: "v1", Kind: "Pod", Namespace: "bench", Name: "app-pod"},
	}
	if !reflect.DeepEqual(next.objects, want) {
		t.Errorf("the recorder was handed %#v, want the references %#v", next.objects, want)
	}
}
