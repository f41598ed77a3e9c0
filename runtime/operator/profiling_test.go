package operator

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
)

// TestMetricsMuxProfiling checks that /debug/pprof/ is served on the metrics address only with
// profiling, and /metrics either way.
func TestMetricsMuxProfiling(t *testing.T) {
	for _, profiling := range []bool{false, true} {
		srv := httptest.NewServer(metricsMux(prometheus.NewRegistry(), profiling))
		pprofCode := http.StatusNotFound
		if profiling {
			pprofCode = http.StatusOK
		}
		for path, want := range map[string]int{
			"/metrics":                       http.StatusOK,
			"/debug/pprof/":                  pprofCode,
			"/debug/pprof/cmdline":           pprofCode,
			"/debug/pprof/goroutine?debug=1": pprofCode,
			"/debug/pprof/profile?seconds=1": pprofCode,
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
	}
}
