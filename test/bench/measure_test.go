//go:build e2e

package main

import (
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

func TestParseRequestTotal(t *testing.T) {
	text := `# HELP apiserver_request_total [STABLE] Counter of apiserver requests
# TYPE apiserver_request_total counter
apiserver_request_total{code="201",component="apiserver",dry_run="",group="",resource="pods",scope="resource",subresource="",verb="POST",version="v1"} 1000
apiserver_request_total{code="201",component="apiserver",dry_run="All",group="",resource="pods",scope="resource",subresource="",verb="POST",version="v1"} 7
apiserver_request_total{code="200",component="apiserver",dry_run="",group="demo.rtfm.co.ua",resource="myapps",scope="resource",subresource="status",verb="APPLY",version="v1"} 998
apiserver_request_total{code="409",component="apiserver",dry_run="",group="demo.rtfm.co.ua",resource="myapps",scope="resource",subresource="status",verb="PUT",version="v1"} 3
apiserver_request_total{code="200",component="",dry_run="",group="",resource="",scope="",subresource="/readyz",verb="GET",version=""} 2
apiserver_request_duration_seconds_bucket{le="0.1"} 5
`
	got, err := parseRequestTotal(strings.NewReader(text))
	if err != nil {
		t.Fatal(err)
	}
	want := counts{
		{Verb: "POST", Resource: "pods"}: 1000,
		{Verb: "APPLY", Group: "demo.rtfm.co.ua", Resource: "myapps", Subresource: "status"}:              998,
		{Verb: "PUT", Group: "demo.rtfm.co.ua", Resource: "myapps", Subresource: "status", Failed: "409"}: 3,
		{Verb: "GET", Subresource: "/readyz"}:                                                             2,
	}
	if len(got) != len(want) {
		t.Fatalf("got %v, want %v", got, want)
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%v: got %v, want %v", k, got[k], v)
		}
	}
	if n := got.total(requests); n != 2001 {
		t.Errorf("requests: %v, want 2001 (the non-resource GET left out)", n)
	}
	if s := got.summary(requests, 2); s != "POST pods 1000, APPLY myapps/status 998, other 3" {
		t.Errorf("summary: %q", s)
	}
}

func TestParseSampleEscapes(t *testing.T) {
	name, labels, v, ok := parseSample(`m{a="x\"y",b="p\\q"} 2.5`)
	if !ok || name != "m" || labels["a"] != `x"y` || labels["b"] != `p\q` || v != 2.5 {
		t.Errorf("got %q %v %v %v", name, labels, v, ok)
	}
}

func TestClassify(t *testing.T) {
	for _, c := range []struct {
		method, url, contentType string
		want                     reqKey
	}{
		{"POST", "/apis/demo.rtfm.co.ua/v1/namespaces/bench/myapps", "", reqKey{Verb: "POST", Group: "demo.rtfm.co.ua", Resource: "myapps"}},
		{"GET", "/api/v1/namespaces/bench/pods?limit=500", "", reqKey{Verb: "LIST", Resource: "pods"}},
		{"GET", "/api/v1/namespaces/bench/pods?watch=true", "", reqKey{Verb: "WATCH", Resource: "pods"}},
		{"GET", "/api/v1/namespaces/bench/pods/a-pod", "", reqKey{Verb: "GET", Resource: "pods"}},
		{"PATCH", "/apis/demo.rtfm.co.ua/v1/namespaces/bench/myapps/a/status", "application/apply-patch+yaml", reqKey{Verb: "APPLY", Group: "demo.rtfm.co.ua", Resource: "myapps", Subresource: "status"}},
		{"PUT", "/api/v1/namespaces/bench", "", reqKey{Verb: "PUT", Resource: "namespaces"}},
		{"GET", "/api/v1/pods", "", reqKey{Verb: "LIST", Resource: "pods"}},
		{"GET", "/version", "", reqKey{Verb: "GET", Subresource: "/version"}},
	} {
		r, _ := http.NewRequest(c.method, "https://x"+c.url, http.NoBody)
		if c.contentType != "" {
			r.Header.Set("Content-Type", c.contentType)
		}
		if got := classify(r); got != c.want {
			t.Errorf("%s %s: got %+v, want %+v", c.method, c.url, got, c.want)
		}
	}
}

func TestReadProc(t *testing.T) {
	st := readProc(os.Getpid())
	if st.RSS <= 0 || st.HWM < st.RSS || st.CPU < 0 {
		t.Errorf("readProc(self) = %+v", st)
	}
}

func TestMedians(t *testing.T) {
	rs := []*result{{cpu: 3, converged: counts{{Verb: "POST", Resource: "pods"}: 10}}, {cpu: 1}, {cpu: 2, converged: counts{{Verb: "POST", Resource: "pods"}: 12}}}
	m := medians(rs)
	if m.cpu != 2 || m.converged[reqKey{Verb: "POST", Resource: "pods"}] != 10 {
		t.Errorf("medians: cpu %v, requests %v", m.cpu, m.converged)
	}
}

// A run's restart figures are the medians of its restarts, each figure on its own: a restart slow
// on one count is not the run's on all.
func TestARunsRestartIsTheMedianOfItsRestarts(t *testing.T) {
	tests := []struct {
		name           string
		restarts       []restart
		took           time.Duration
		cpu, serverCPU float64
	}{
		{name: "none", took: 0},
		{name: "one is itself", restarts: []restart{{took: time.Second, cpu: 1, serverCPU: 2}}, took: time.Second, cpu: 1, serverCPU: 2},
		{name: "an odd count is the middle one", restarts: []restart{
			{took: 300 * time.Millisecond, cpu: 0.1, serverCPU: 3}, {took: 100 * time.Millisecond, cpu: 0.3, serverCPU: 1}, {took: 200 * time.Millisecond, cpu: 0.2, serverCPU: 2},
		}, took: 200 * time.Millisecond, cpu: 0.2, serverCPU: 2},
		{name: "an even count is the mean of the middle two", restarts: []restart{
			{took: 100 * time.Millisecond}, {took: 400 * time.Millisecond}, {took: 200 * time.Millisecond}, {took: 300 * time.Millisecond},
		}, took: 250 * time.Millisecond},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			took, cpu, serverCPU := medianRestart(tt.restarts)
			if took != tt.took || cpu != tt.cpu || serverCPU != tt.serverCPU {
				t.Errorf("got %v, %v, %v; want %v, %v, %v", took, cpu, serverCPU, tt.took, tt.cpu, tt.serverCPU)
			}
		})
	}
}

// A run's record names the restarts that held a consistency check of the API server's watch
// cache, counted from apiserver_storage_consistency_checks_total over every resource.
func TestARestartThatHeldTheAPIServersCacheCheckIsNamed(t *testing.T) {
	metrics := `# TYPE apiserver_storage_consistency_checks_total counter
apiserver_storage_consistency_checks_total{group="",resource="pods",status="success"} 3
apiserver_storage_consistency_checks_total{group="demo.rtfm.co.ua",resource="myapps",status="success"} 2
apiserver_request_total{code="200",verb="GET"} 9
`
	if n, _ := sumSamples(metrics, "apiserver_storage_consistency_checks_total", nil); n != 5 {
		t.Errorf("the checks of every resource: %v, want 5", n)
	}
	for _, tt := range []struct {
		name     string
		restarts []restart
		want     string
	}{
		{"none held one", []restart{{took: time.Second}, {took: 2 * time.Second}}, ""},
		{"one of two held one", []restart{{took: time.Second}, {took: 2 * time.Second, cacheChecks: 1}}, " (1 of 2 restarts held the API server's watch cache check)"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			r := &result{restarts: tt.restarts}
			if got := r.restartCacheChecks(); got != tt.want {
				t.Errorf("restartCacheChecks() = %q, want %q", got, tt.want)
			}
			if times := r.restartTimes(); strings.Contains(times, "consistency checks") != (tt.want != "") {
				t.Errorf("restartTimes() = %q", times)
			}
		})
	}
}

// Paired ratios divide each metacel run by the hand-written run of its own repetition: a slow
// repetition (both runs slower) does not show as metacel's cost, as a ratio of medians may.
func TestPairedRatiosPairRunsOfOneRepetition(t *testing.T) {
	run := func(converge float64) *result {
		return &result{converge: time.Duration(converge * float64(time.Second)), rss: 100, cpu: 1, serverCPU: 1, restart: time.Second, created: time.Second}
	}
	results := map[string][]*result{
		handwritten + "/unthrottled": {run(10), run(10), run(20)}, // the third repetition ran on a slower machine
		metacel + "/unthrottled":     {run(12), run(11), run(24)},
	}
	got := pairedRatios([]benchConfig{{name: "unthrottled"}}, results)
	if want := "| unthrottled | ×1.20 (1.10, 1.20, 1.20) |"; !strings.Contains(got, want) {
		t.Errorf("got\n%s\nwant a row starting %q", got, want)
	}
	if got := pairedRatios([]benchConfig{{name: "unthrottled"}}, map[string][]*result{
		handwritten + "/unthrottled": {run(10)}, metacel + "/unthrottled": {run(12)},
	}); got != "" {
		t.Errorf("one run has no paired ratios to give: %q", got)
	}
}

// The control plane's own requests are taken out by user: the API server's, the scheduler's and
// kwok's, each in the window of its stage timestamp; a request outside it counts for nothing.
func TestAuditCountsAreByUserInTheirWindow(t *testing.T) {
	line := func(user, verb, resource, subresource, at string, code int) string {
		return `{"stage":"ResponseComplete","verb":"` + verb + `","requestURI":"/x","user":{"username":"` + user + `"},` +
			`"objectRef":{"resource":"` + resource + `","subresource":"` + subresource + `"},"responseStatus":{"code":` + strconv.Itoa(code) + `},"stageTimestamp":"` + at + `"}`
	}
	log := strings.Join([]string{
		line(apiserverUser, "update", "leases", "", "2026-01-01T00:00:00.5Z", 200),
		line(schedulerUser, "create", "pods", "binding", "2026-01-01T00:00:01Z", 201),
		line(schedulerUser, "create", "pods", "binding", "2026-01-01T00:00:01.5Z", 201),
		line(kwokUser, "patch", "pods", "status", "2026-01-01T00:00:02Z", 200),
		line(kwokUser, "delete", "pods", "", "2026-01-01T00:00:02Z", 404),
		line(kwokUser, "patch", "pods", "status", "2026-01-01T00:00:09Z", 200), // after the window
		`{"stage":"ResponseStarted","verb":"watch","user":{"username":"kwok"},"objectRef":{"resource":"pods"},"stageTimestamp":"2026-01-01T00:00:01Z"}`,
	}, "\n") + "\n"
	path := filepath.Join(t.TempDir(), "audit.log")
	if err := os.WriteFile(path, []byte(log), 0o644); err != nil {
		t.Fatal(err)
	}
	from, _ := time.Parse(time.RFC3339, "2026-01-01T00:00:00Z")
	got, err := auditCounts(path, from, from.Add(5*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	if s := got.summary(requests, 10); s != "kube-apiserver: PUT leases 1; kube-scheduler: POST pods/binding 2; kwok: DELETE pods (404) 1, PATCH pods/status 1" {
		t.Errorf("summary %q", s)
	}
	if all := got.all(); all.total(requests) != 5 || all[reqKey{Verb: "POST", Resource: "pods", Subresource: "binding"}] != 2 {
		t.Errorf("all %v", all)
	}
	if none, err := auditCounts(filepath.Join(t.TempDir(), "none.log"), from, from); err != nil || none.summary(requests, 10) != "–" {
		t.Errorf("no log: %v, %v", none, err)
	}
}
