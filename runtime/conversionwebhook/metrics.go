package conversionwebhook

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// The results a request is counted by.
const (
	resultSuccess    = "success"
	resultFailure    = "failure"
	resultBadRequest = "bad_request"
)

// Metrics are the conversion webhook's metrics; a nil *Metrics records nothing.
type Metrics struct {
	requests *prometheus.CounterVec
	objects  prometheus.Counter
	duration prometheus.Histogram
}

// NewMetrics registers the conversion webhook's metrics in reg.
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "metacel_conversion_requests_total",
			Help: "Conversion requests (ConversionReviews) by result: success, failure (an object did not convert), bad_request.",
		}, []string{"result"}),
		objects: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "metacel_conversion_objects_total",
			Help: "Objects the conversion requests carried (divide the duration's sum by it for the time per object).",
		}),
		duration: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "metacel_conversion_request_duration_seconds",
			Help:    "Time to answer one conversion request, from its body read to its response written.",
			Buckets: prometheus.ExponentialBuckets(0.0001, 2, 16),
		}),
	}
	reg.MustRegister(m.requests, m.objects, m.duration)
	return m
}

// observe records one request: its result, how many objects it carried, and how long it took.
func (m *Metrics) observe(result string, objects int, took time.Duration) {
	if m == nil {
		return
	}
	m.requests.WithLabelValues(result).Inc()
	m.objects.Add(float64(objects))
	m.duration.Observe(took.Seconds())
}
