package priorityqueue

import (
	"strconv"
	"testing"

	"k8s.io/client-go/util/workqueue"
)

// BenchmarkResync is a resync's keys through the queue: every key added (at low here, FIFO for
// client-go's own), then each taken and done, as the workers do. Per key.
func BenchmarkResync(b *testing.B) {
	keys := make([]string, 10000)
	for i := range keys {
		keys[i] = "ns/parent-" + strconv.Itoa(i)
	}
	run := func(b *testing.B, q workqueue.TypedRateLimitingInterface[string], add func(string)) {
		b.ReportAllocs()
		for b.Loop() {
			for _, k := range keys {
				add(k)
			}
			for q.Len() > 0 {
				k, _ := q.Get()
				q.Done(k)
			}
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(keys)), "ns/key")
	}
	b.Run("client-go FIFO", func(b *testing.B) {
		q := workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[string]())
		defer q.ShutDown()
		run(b, q, q.Add)
	})
	b.Run("priorityqueue, at low", func(b *testing.B) {
		q := NewWorkqueue("", workqueue.DefaultTypedControllerRateLimiter[string]())
		defer q.ShutDown()
		run(b, q, q.AddLow)
	})
	b.Run("priorityqueue, at high", func(b *testing.B) {
		q := NewWorkqueue("", workqueue.DefaultTypedControllerRateLimiter[string]())
		defer q.ShutDown()
		run(b, q, q.Add)
	})
}
