package operator

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// TestMetricsMuxProfiling checks that /debug/pprof/ is served on the metrics address only with
// profiling, and /metrics either way.
func TestMetricsMuxProfiling(t *testing.T) {
	for _, profiling := range []bool{false, true} {
		mux := metricsMux(prometheus.NewRegistry(), profiling)
		srv := httptest.NewServer(mux)
		pprofCode := http.StatusNotFound
		if profiling {
			pprofCode = http.StatusOK
		}
		for path, want := range map[string]int{
			"/metrics":                       http.StatusOK,
			"/debug/pprof/":                  pprofCode,
			"/debug/pprof/cmdline":           pprofCode,
			"/debug/pprof/goroutine?debug=1": pprofCode,
		} {
			resp, err := http.Get(srv.URL + path)
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			_ = resp.Body.Close()
			if resp.StatusCode != want {
				t.Errorf("profiling=%v: GET %s: %d, want %d", profiling, path, resp.StatusCode, want)
			}
			if path == "/debug/pprof/" && want == http.StatusOK && !strings.Contains(string(body), "goroutine") {
				t.Errorf("profiling=%v: GET %s lists no goroutine profile:\n%s", profiling, path, body)
			}
		}
		srv.Close()

		// a CPU profile, cut short: the handler profiles until the request is done, here after
		// 50 ms rather than the second asked for, and writes the profile (gzipped) all the same
		ctx, cancel := context.WithTimeout(t.Context(), 50*time.Millisecond)
		rec := httptest.NewRecorder()
		mux.ServeHTTP(rec, httptest.NewRequestWithContext(ctx, http.MethodGet, "/debug/pprof/profile?seconds=1", nil))
		cancel()
		if rec.Code != pprofCode {
			t.Errorf("profiling=%v: GET /debug/pprof/profile: %d, want %d: %s", profiling, rec.Code, pprofCode, rec.Body)
		}
		if profiling && !bytes.HasPrefix(rec.Body.Bytes(), []byte{0x1f, 0x8b}) {
			t.Errorf("GET /debug/pprof/profile gave no gzipped profile: %q", rec.Body.Bytes()[:min(rec.Body.Len(), 16)])
		}
	}
}
