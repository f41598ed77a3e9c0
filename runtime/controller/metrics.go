package controller

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Metrics are the controller-runtime-style reconcile metrics, labelled by policy.
type Metrics struct {
	total    *prometheus.CounterVec
	errors   *prometheus.CounterVec
	duration *prometheus.HistogramVec
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
	reg.MustRegister(m.total, m.errors, m.duration, m.render, m.panics)
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
	m.duration.WithLabelValues(controller).Observe(end.Sub(start).Seconds())
	result := "success"
	if err != nil {
		result = "error"
		m.errors.WithLabelValues(controller).Inc()
	}
	m.total.WithLabelValues(controller, result).Inc()
}
