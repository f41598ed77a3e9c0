//go:build e2e

package e2e

import (
	"fmt"
	"runtime"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// BenchmarkThousandMyApps creates 1,000 MyApps and measures the seconds until every Pod exists
// and every MyApp is Ready (its Pod Running on the simulated nodes). Run it with `make bench-e2e`.
func BenchmarkThousandMyApps(b *testing.B) {
	const parents = 1000
	for b.Loop() {
		b.StopTimer()
		heapBefore := heapInUse()
		rt := startRuntime(b, policies)
		ns := newNamespace(b, "bench")
		b.StartTimer()
		start := time.Now()
		createMyApps(b, ns, parents)
		created := time.Since(start)
		var podsAt time.Duration
		eventually(b, 10*time.Minute, "all MyApps Ready", func() error {
			if podsAt == 0 {
				pods, err := cluster.kube.CoreV1().Pods(ns).List(b.Context(), metav1.ListOptions{LabelSelector: "metacel.dev/policy=myapp"})
				if err != nil {
					return err
				}
				if len(pods.Items) < parents {
					return fmt.Errorf("%d pods", len(pods.Items))
				}
				podsAt = time.Since(start)
			}
			ready, err := readyMyApps(b, ns)
			if err != nil {
				return err
			}
			if ready < parents {
				return fmt.Errorf("%d of %d Ready", ready, parents)
			}
			return nil
		})
		b.ReportMetric(created.Seconds(), "s-created")
		b.ReportMetric(podsAt.Seconds(), "s-all-pods")
		b.ReportMetric(time.Since(start).Seconds(), "s-all-ready")
		b.ReportMetric(float64(rt.writes.Load()), "writes")
		b.ReportMetric(rt.reconciles("myapp"), "syncs")
		// the runtime runs in this process: its heap is what the test's own heap gained
		heap := heapInUse() - heapBefore
		b.ReportMetric(heap/1e6, "heap-MB")
		b.ReportMetric(heap/1e3/parents, "heap-KB/parent")
		b.Logf("QPS %v, burst %v, %d workers", runtimeQPS, runtimeBurst, runtimeWorkers)
	}
}

// createMyApps creates MyApps with 8 concurrent clients.
func createMyApps(b *testing.B, ns string, n int) {
	var wg sync.WaitGroup
	names := make(chan int)
	for range 8 {
		wg.Go(func() {
			for i := range names {
				app := sample(b, "myapp", ns)
				app.SetName(fmt.Sprintf("app-%04d", i))
				create(b, myAppsGVR, app)
			}
		})
	}
	for i := range n {
		names <- i
	}
	close(names)
	wg.Wait()
}

// heapInUse is the live heap after a garbage collection, in bytes.
func heapInUse() float64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return float64(m.HeapInuse)
}
