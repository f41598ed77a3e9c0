package conversion

import (
	"context"
	"slices"
	"testing"
	"time"
)

// BenchmarkConvert converts one Cache from v1alpha1 to v1 and back, and reports the latency of
// one conversion (one way) at the 50th and 99th percentile.
func BenchmarkConvert(b *testing.B) {
	cv := loadCacheB(b)
	old := object("versions.example.com/v1alpha1", map[string]any{"size": "3", "image": "redis:7"}, nil)
	ctx := context.Background()
	var took []time.Duration
	for b.Loop() {
		start := time.Now()
		hub, err := cv.Convert(ctx, old, "versions.example.com/v1")
		if err != nil {
			b.Fatal(err)
		}
		mid := time.Now()
		if _, err := cv.Convert(ctx, hub, "versions.example.com/v1alpha1"); err != nil {
			b.Fatal(err)
		}
		took = append(took, mid.Sub(start), time.Since(mid))
	}
	slices.Sort(took)
	b.ReportMetric(float64(took[len(took)/2].Microseconds()), "p50-µs/conversion")
	b.ReportMetric(float64(took[len(took)*99/100].Microseconds()), "p99-µs/conversion")
}
