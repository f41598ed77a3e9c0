package operator

import (
	"context"
	"fmt"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/events"
	"k8s.io/client-go/tools/reference"
	"k8s.io/client-go/util/flowcontrol"
)

// Events have their own queue, rate and client: a burst of child creations makes as many events,
// and they must never delay a sync, take the children's requests, or pile up. client-go's events
// broadcaster gives every event it is handed a goroutine and a copy that live until its request
// is sent: handed 10,000 events at once, it holds 10,000 goroutines blocked on its client's rate
// limit for 1,000 s. So the recorder the controllers use is an eventQueue: it never blocks, holds
// at most eventsQueued events of each type, hands them on no faster than eventsQPS (after a burst
// of eventsBurst), and drops and counts the rest (metacel_events_dropped_total). Warning events
// have their own share of the queue and go first: a burst of Normal ones never crowds out a
// failure report.
const (
	eventsQPS    = 10
	eventsBurst  = 50
	eventsQueued = 1000
)

// eventQueue is an events.EventRecorder that queues events for next, and drops past its bound.
type eventQueue struct {
	next              events.EventRecorder
	warnings, normals chan func()
	dropped           *prometheus.CounterVec
}

var _ events.EventRecorder = &eventQueue{}

func newEventQueue(next events.EventRecorder, size int, reg prometheus.Registerer) *eventQueue {
	q := &eventQueue{
		next: next, warnings: make(chan func(), size), normals: make(chan func(), size),
		dropped: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "metacel_events_dropped_total",
			Help: "Events dropped because more were waiting to be sent than the queue holds, by type.",
		}, []string{"type"}),
	}
	reg.MustRegister(q.dropped)
	return q
}

// Eventf implements events.EventRecorder; it never blocks. The note is formatted now, and the
// objects are queued as references: a queued event holds a few strings, never an object (a
// decoded parent, a rendered child), which a full queue would keep in memory a thousand times.
func (q *eventQueue) Eventf(regarding, related runtime.Object, eventtype, reason, action, note string, args ...any) {
	message := fmt.Sprintf(note, args...)
	regardingRef, relatedRef := referenceTo(regarding), referenceTo(related)
	send := func() { q.next.Eventf(regardingRef, relatedRef, eventtype, reason, action, "%s", message) }
	queue := q.normals
	if eventtype == "Warning" {
		queue = q.warnings
	}
	select {
	case queue <- send:
	default:
		q.dropped.WithLabelValues(eventtype).Inc()
	}
}

// referenceTo is a reference to obj, which event recorders take in its place (client-go's
// reference.GetReference returns a reference as it is); obj itself when it has no kind to name it
// by, for the recorder to report; nil for nil.
func referenceTo(obj runtime.Object) runtime.Object {
	if obj == nil {
		return nil
	}
	ref, err := reference.GetReference(scheme.Scheme, obj)
	if err != nil {
		return obj
	}
	return ref
}

// run hands the queued events on, Warning ones first, as fast as limiter allows, until ctx is
// done.
func (q *eventQueue) run(ctx context.Context, limiter flowcontrol.RateLimiter) {
	for {
		send, ok := q.take(ctx)
		if !ok || limiter.Wait(ctx) != nil {
			return
		}
		send()
	}
}

// take waits for the next event to send: a Warning one when there is one.
func (q *eventQueue) take(ctx context.Context) (func(), bool) {
	select {
	case send := <-q.warnings:
		return send, true
	default:
	}
	select {
	case <-ctx.Done():
		return nil, false
	case send := <-q.warnings:
		return send, true
	case send := <-q.normals:
		return send, true
	}
}
