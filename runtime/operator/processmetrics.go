package operator

import (
	"context"
	"sync"

	"github.com/prometheus/client_golang/prometheus"
	clientmetrics "k8s.io/client-go/tools/metrics"
	"k8s.io/client-go/util/workqueue"
)

var registerGlobal sync.Once

// processRegistry holds the metrics that client-go reports through process-wide hooks:
// workqueue_* for every queue (one per controller, named after its policy) and
// rest_client_requests_total. /metrics serves it beside the run's own registry. The hooks are
// the process's, not a controller's: they are installed here, where the process starts, once,
// before any controller makes its queue.
var processRegistry = prometheus.NewRegistry()

// registerProcessMetrics installs client-go's process-wide metric hooks, once per process.
func registerProcessMetrics() {
	reg := processRegistry
	registerGlobal.Do(func() {
		p := newWorkqueueMetrics(reg)
		workqueue.SetProvider(p)
		requests := prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "rest_client_requests_total",
			Help: "Number of HTTP requests to the API server, by status code, method and host.",
		}, []string{"code", "method", "host"})
		reg.MustRegister(requests)
		clientmetrics.Register(clientmetrics.RegisterOpts{RequestResult: requestResult{requests}})
	})
}

type requestResult struct{ c *prometheus.CounterVec }

func (r requestResult) Increment(_ context.Context, code, method, host string) {
	r.c.WithLabelValues(code, method, host).Inc()
}

// workqueueMetrics are controller-runtime's workqueue metrics, labelled by queue name.
type workqueueMetrics struct {
	depth, unfinished, longest *prometheus.GaugeVec
	adds, retries              *prometheus.CounterVec
	latency, duration          *prometheus.HistogramVec
}

func newWorkqueueMetrics(reg prometheus.Registerer) *workqueueMetrics {
	buckets := prometheus.ExponentialBuckets(10e-9, 10, 12)
	label := []string{"name", "controller"}
	m := &workqueueMetrics{
		depth:      prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "workqueue_depth", Help: "Current depth of the workqueue."}, label),
		unfinished: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "workqueue_unfinished_work_seconds", Help: "Seconds of work in progress not yet observed by work_duration."}, label),
		longest:    prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "workqueue_longest_running_processor_seconds", Help: "Seconds the longest running processor has been running."}, label),
		adds:       prometheus.NewCounterVec(prometheus.CounterOpts{Name: "workqueue_adds_total", Help: "Total number of adds handled by the workqueue."}, label),
		retries:    prometheus.NewCounterVec(prometheus.CounterOpts{Name: "workqueue_retries_total", Help: "Total number of retries handled by the workqueue."}, label),
		latency:    prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "workqueue_queue_duration_seconds", Help: "Seconds an item stays in the workqueue before being processed.", Buckets: buckets}, label),
		duration:   prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "workqueue_work_duration_seconds", Help: "Seconds processing an item from the workqueue takes.", Buckets: buckets}, label),
	}
	reg.MustRegister(m.depth, m.unfinished, m.longest, m.adds, m.retries, m.latency, m.duration)
	return m
}

func (m *workqueueMetrics) NewDepthMetric(n string) workqueue.GaugeMetric {
	return m.depth.WithLabelValues(n, n)
}
func (m *workqueueMetrics) NewAddsMetric(n string) workqueue.CounterMetric {
	return m.adds.WithLabelValues(n, n)
}
func (m *workqueueMetrics) NewLatencyMetric(n string) workqueue.HistogramMetric {
	return m.latency.WithLabelValues(n, n)
}
func (m *workqueueMetrics) NewWorkDurationMetric(n string) workqueue.HistogramMetric {
	return m.duration.WithLabelValues(n, n)
}
func (m *workqueueMetrics) NewUnfinishedWorkSecondsMetric(n string) workqueue.SettableGaugeMetric {
	return m.unfinished.WithLabelValues(n, n)
}
func (m *workqueueMetrics) NewLongestRunningProcessorSecondsMetric(n string) workqueue.SettableGaugeMetric {
	return m.longest.WithLabelValues(n, n)
}
func (m *workqueueMetrics) NewRetriesMetric(n string) workqueue.CounterMetric {
	return m.retries.WithLabelValues(n, n)
}
