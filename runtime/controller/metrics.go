package controller

import (
	"slices"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
)

// Metrics are the controller-runtime-style reconcile metrics, labelled by policy, and metacel's
// own of a sync: its latency from the event that asked for it, its duration by outcome.
type Metrics struct {
	total    *prometheus.CounterVec
	errors   *prometheus.CounterVec
	duration *prometheus.HistogramVec
	// byOutcome is a sync's duration by what came of it (outcomeOf)
	byOutcome *prometheus.HistogramVec
	// eventLatency is the time from a parent's, child's or related object's event to the start
	// of the sync that handles it
	eventLatency *prometheus.HistogramVec
	// render is the time a render takes: every CEL expression of one sync
	render *prometheus.HistogramVec
	panics *prometheus.CounterVec
}

// NewMetrics registers the reconcile metrics in reg.
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		total: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "controller_runtime_reconcile_total",
			Help: "Total number of reconciliations per controller (policy) and result.",
		}, []string{"controller", "result"}),
		errors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "controller_runtime_reconcile_errors_total",
			Help: "Total number of reconciliation errors per controller (policy).",
		}, []string{"controller"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "controller_runtime_reconcile_time_seconds",
			Help:    "Length of time per reconciliation per controller (policy).",
			Buckets: prometheus.ExponentialBuckets(0.0005, 2, 16),
		}, []string{"controller"}),
		byOutcome: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "metacel_sync_duration_seconds",
			Help: "Length of time of a sync per policy and outcome: success, error (retried with backoff), " +
				"terminal (waits for an input to change), conflict (retried), fenced (this replica may no longer write).",
			Buckets: prometheus.ExponentialBuckets(0.0005, 2, 16),
		}, []string{"policy", "outcome"}),
		eventLatency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "metacel_sync_event_latency_seconds",
			Help: "Time from the informer event of a parent, child or related object (source) to the start of the sync " +
				"that handles it, per policy; the first event a sync handles counts, the others it covers do not.",
			Buckets: prometheus.ExponentialBuckets(0.001, 2, 18),
		}, []string{"policy", "source"}),
		render: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "metacel_cel_eval_duration_seconds",
			Help:    "Time to evaluate a policy's CEL for one parent (one render), per policy.",
			Buckets: prometheus.ExponentialBuckets(1e-6, 4, 12),
		}, []string{"policy"}),
		panics: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "metacel_sync_panics_total",
			Help: "Syncs that panicked (recovered, logged with their stack, and retried with backoff), per policy.",
		}, []string{"policy"}),
	}
	reg.MustRegister(m.total, m.errors, m.duration, m.byOutcome, m.eventLatency, m.render, m.panics)
	return m
}

func (m *Metrics) observeRender(policy string, seconds float64) {
	if m != nil {
		m.render.WithLabelValues(policy).Observe(seconds)
	}
}

func (m *Metrics) panicked(policy string) {
	if m != nil {
		m.panics.WithLabelValues(policy).Inc()
	}
}

func (m *Metrics) observe(controller string, start, end time.Time, err error) {
	if m == nil {
		return
	}
	seconds := end.Sub(start).Seconds()
	m.duration.WithLabelValues(controller).Observe(seconds)
	m.byOutcome.WithLabelValues(controller, outcomeOf(err)).Observe(seconds)
	result := "success"
	if err != nil {
		result = "error"
		m.errors.WithLabelValues(controller).Inc()
	}
	m.total.WithLabelValues(controller, result).Inc()
}

// outcomeOf names what came of a sync, as processNextWorkItem handles it.
func outcomeOf(err error) string {
	switch {
	case err == nil:
		return "success"
	case isTerminal(err):
		return "terminal"
	case isConflict(err):
		return "conflict"
	case apierrors.ReasonForError(err) == reasonWriteFenced:
		return "fenced"
	default:
		return "error"
	}
}

// Sources of the events that ask for a sync (metacel_sync_event_latency_seconds's source).
const (
	eventOfParent  = "parent"
	eventOfChild   = "child"
	eventOfRelated = "related"
)

// observeEventLatency observes the time from the first event a sync handles to its start.
func (m *Metrics) observeEventLatency(policy string, e pendingEvent, start time.Time) {
	if m != nil && !e.at.IsZero() {
		m.eventLatency.WithLabelValues(policy, e.source).Observe(start.Sub(e.at).Seconds())
	}
}

// pendingEvents remember, per parent key, the first event no sync has handled yet: when it came
// and from what. The worker that takes the key from the queue takes its event too, so an event
// that comes during a sync counts for the next one, as the queue requeues the key.
type pendingEvents struct {
	mu    sync.Mutex
	byKey map[string]heldEvent
	// base is when the first event came: byKey holds each event's time as the time since base
	base time.Time
	// peak is the most keys byKey held since it was made: a Go map keeps the room of its most
	// entries, so one emptied after a peak (every parent's first event, at a start) is dropped
	peak int
}

// renewPendingAt is the peak from which an emptied byKey is dropped, as priorityqueue does.
const renewPendingAt = 1024

type pendingEvent struct {
	at     time.Time
	source string
}

// heldEvent is a pendingEvent as byKey holds it, in 16 bytes where a time and a string take 40:
// a start or a resync queues every parent, each with its event.
type heldEvent struct {
	since  time.Duration
	source uint8 // its index in eventSources (math.MaxUint8: none of them)
}

// eventSources are the sources of events, as heldEvent numbers them.
var eventSources = [...]string{eventOfParent, eventOfChild, eventOfRelated}

// note remembers an event of source for the parent of key, unless an earlier one waits.
func (p *pendingEvents) note(key, source string, at time.Time) {
	p.mu.Lock()
	if _, ok := p.byKey[key]; !ok {
		if p.byKey == nil {
			p.byKey = map[string]heldEvent{}
		}
		if p.base.IsZero() {
			p.base = at
		}
		p.byKey[key] = heldEvent{since: at.Sub(p.base), source: uint8(slices.Index(eventSources[:], source))}
		p.peak = max(p.peak, len(p.byKey))
	}
	p.mu.Unlock()
}

// take returns and forgets the event waiting for the parent of key (zero: none).
func (p *pendingEvents) take(key string) pendingEvent {
	p.mu.Lock()
	defer p.mu.Unlock()
	e, ok := p.byKey[key]
	if !ok {
		return pendingEvent{}
	}
	delete(p.byKey, key)
	if len(p.byKey) == 0 && p.peak >= renewPendingAt {
		p.byKey, p.peak = nil, 0
	}
	source := "unknown" // a source not in eventSources
	if int(e.source) < len(eventSources) {
		source = eventSources[e.source]
	}
	return pendingEvent{at: p.base.Add(e.since), source: source}
}
