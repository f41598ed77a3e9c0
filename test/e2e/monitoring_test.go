//go:build e2e

package e2e

import (
	"bufio"
	"errors"
	"io"
	"maps"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"metacel.dev/metacel/runtime/operator"
	"metacel.dev/metacel/runtime/parentcrd"
	"metacel.dev/metacel/runtime/servingcert"
)

// queriedMetrics lists the metrics the dashboard's queries and the alerts name (test/monitoring
// parses them with Prometheus' own parser and keeps this list).
const queriedMetrics = "../monitoring/testdata/metrics.txt"

// TestMonitoringQueriesNameServedMetrics runs the runtime (sharded, with the conversion webhook,
// so that it serves every metric it has), makes one sync happen, scrapes /metrics, and finds
// each metric the dashboard and the alerts name: in the scrape (a histogram's _bucket, _sum and
// _count count), else registered and waiting for its first observation (a panic, a conversion
// request), else among the Go and process metrics `metacel run` registers beside its own.
func TestMonitoringQueriesNameServedMetrics(t *testing.T) {
	metricsAddr, webhookAddr := freeLoopbackAddress(t), freeLoopbackAddress(t)
	shardNS := newNamespace(t, "shards")
	rt := startRuntimeWith(t, operator.Options{
		PolicyDirs:  []string{filepath.Join("testdata", "policies", "resync")},
		MetricsAddr: metricsAddr,
		Sharding:    testSharding(shardNS, "monitoring"),
		Webhook: &operator.Webhook{
			Addr:         webhookAddr,
			ClientConfig: apiextensionsClientConfigURL("https://" + webhookAddr + parentcrd.WebhookPath),
			Certificate:  servingcert.Options{SecretName: "metacel-webhook-tls", IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}},
		},
	})
	ns := newNamespace(t, "monitoring")
	create(t, widgetsGVR, widget(ns, "m"))
	waitFor(t, widgetsGVR, ns, "m", wait, hasCondition("Ready", "True", "", ""))

	var served map[string]bool
	eventually(t, 10*time.Second, "a sync observed from its event, and the shard slots", func() error {
		var err error
		if served, err = scrapeNames("http://" + metricsAddr + "/metrics"); err != nil {
			return err
		}
		for _, name := range []string{"metacel_sync_event_latency_seconds_bucket", "metacel_sync_duration_seconds_bucket", "metacel_shard_range"} {
			if !served[name] {
				return errors.New(name + " is not served yet")
			}
		}
		return nil
	})
	process := prometheus.NewRegistry() // what operator.Run registers when it makes its registry
	process.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	processNames, err := gatheredNames(process)
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(queriedMetrics)
	if err != nil {
		t.Fatal(err)
	}
	queried := strings.Fields(string(data))
	if len(queried) < 20 {
		t.Fatalf("%s lists %d metrics", queriedMetrics, len(queried))
	}
	for _, name := range queried {
		if !served[name] && !registeredIn(rt.registry, name) && !processNames[name] {
			t.Errorf("the queries name %s, which the runtime does not serve", name)
		}
	}
}

// TestHelmMonitoringMatchesKustomize renders the chart with its monitoring values enabled and
// deploy/monitoring: the same ServiceMonitor, PodMonitor, PrometheusRule and dashboard
// ConfigMap, labelled for Grafana's sidecar. (The default render has none of them:
// TestHelmChartMatchesKustomize.)
func TestHelmMonitoringMatchesKustomize(t *testing.T) {
	helm := os.Getenv("METACEL_HELM")
	if helm == "" {
		t.Skip("METACEL_HELM is not set: run through `make e2e`, which builds helm")
	}
	// the chart refuses both monitors at once (each series would be scraped twice): render each
	chart := map[string]*unstructured.Unstructured{}
	for _, values := range []string{
		"monitoring.serviceMonitor.enabled=true,monitoring.prometheusRule.enabled=true,monitoring.dashboard.enabled=true",
		"monitoring.podMonitor.enabled=true",
	} {
		out, err := exec.CommandContext(t.Context(), helm, "template", "metacel", filepath.Join(repo, "deploy", "helm", "metacel"), "--namespace", "metacel-system",
			"--set", values, "--show-only", "templates/monitoring.yaml").CombinedOutput()
		if err != nil {
			t.Fatalf("helm template: %v\n%s", err, out)
		}
		maps.Copy(chart, byKindAndName(readObjects(t, writeTemp(t, "chart.yaml", out))))
	}
	kustomized, err := kubectlCmd(t.Context(), "kustomize", filepath.Join(repo, "deploy", "monitoring"))
	if err != nil {
		t.Fatalf("kubectl kustomize: %v\n%s", err, kustomized)
	}
	base := byKindAndName(readObjects(t, writeTemp(t, "base.yaml", []byte(kustomized))))
	for k, v := range byKindAndName(readObjects(t, filepath.Join(repo, "deploy", "monitoring", "podmonitor.yaml"))) {
		base[k] = v // the alternative to the ServiceMonitor, not in the kustomization
	}
	if got, want := keys(chart), keys(base); !reflect.DeepEqual(got, want) {
		t.Fatalf("the chart renders %v, deploy/monitoring %v", got, want)
	}
	for name, c := range chart {
		b := base[name]
		for _, field := range []string{"spec", "data"} {
			if !reflect.DeepEqual(c.Object[field], b.Object[field]) {
				t.Errorf("%s: the chart's %s differs from deploy/monitoring's", name, field)
			}
		}
		if name == "ConfigMap/metacel-dashboard" && (c.GetLabels()["grafana_dashboard"] != "1" || b.GetLabels()["grafana_dashboard"] != "1") {
			t.Errorf("%s is not labelled grafana_dashboard: \"1\" in both", name)
		}
	}
}

// scrapeNames reads /metrics and returns the names of the samples it holds.
func scrapeNames(url string) (map[string]bool, error) {
	resp, err := http.Get(url)
	if err != nil {
		return nil, err
	}
	defer func() { _ = resp.Body.Close() }()
	if resp.StatusCode != http.StatusOK {
		body, _ := io.ReadAll(resp.Body)
		return nil, errors.New(resp.Status + ": " + string(body))
	}
	names := map[string]bool{}
	lines := bufio.NewScanner(resp.Body)
	lines.Buffer(nil, 1<<20)
	for lines.Scan() {
		line := lines.Text()
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		if i := strings.IndexAny(line, "{ "); i > 0 {
			names[line[:i]] = true
		}
	}
	return names, lines.Err()
}

// gatheredNames are the names of the samples reg gathers, a histogram's as _bucket, _sum, _count.
func gatheredNames(reg prometheus.Gatherer) (map[string]bool, error) {
	families, err := reg.Gather()
	if err != nil {
		return nil, err
	}
	names := map[string]bool{}
	for _, f := range families {
		names[f.GetName()] = true
		for _, suffix := range []string{"_bucket", "_sum", "_count"} {
			names[f.GetName()+suffix] = true
		}
	}
	return names, nil
}

// registeredIn reports whether reg holds a metric of that name (of a histogram, for its _bucket,
// _sum or _count), with or without series yet: a registry refuses a second metric of a name it
// holds.
func registeredIn(reg *prometheus.Registry, name string) bool {
	candidates := []string{name}
	for _, suffix := range []string{"_bucket", "_sum", "_count"} {
		if base, ok := strings.CutSuffix(name, suffix); ok {
			candidates = append(candidates, base)
		}
	}
	for _, n := range candidates {
		probe := prometheus.NewGauge(prometheus.GaugeOpts{Name: n, Help: "a probe of the test"})
		if err := reg.Register(probe); err != nil {
			return true
		}
		reg.Unregister(probe)
	}
	return false
}
