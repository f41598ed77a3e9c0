package monitoring

import (
	"bytes"
	"encoding/json"
	"flag"
	"log/slog"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/model/rulefmt"
	"github.com/prometheus/prometheus/promql/parser"
	"sigs.k8s.io/yaml"
)

var update = flag.Bool("update", false, "rewrite testdata/metrics.txt from the queries")

const (
	chartFiles = "../../deploy/helm/metacel/files/monitoring"
	deployDir  = "../../deploy/monitoring"
	operating  = "../../docs/operating.md"
	metricList = "testdata/metrics.txt"
)

// grafanaVariables are the dashboard's variables in a query, and what stands for them when it
// is parsed.
var grafanaVariables = strings.NewReplacer("$__rate_interval", "5m", "$__interval", "1m", "$__range", "1h")

// query is one PromQL expression and where it comes from.
type query struct{ where, expr string }

func alertRules(t *testing.T) []rulefmt.Rule {
	t.Helper()
	groups, errs := rulefmt.ParseFile(filepath.Join(chartFiles, "alerts.yaml"), false, model.UTF8Validation, parser.NewParser(parser.Options{}), slog.New(slog.DiscardHandler))
	for _, err := range errs {
		t.Errorf("alerts.yaml: %v", err)
	}
	if groups == nil {
		t.FailNow()
	}
	var out []rulefmt.Rule
	for _, g := range groups.Groups {
		out = append(out, g.Rules...)
	}
	return out
}

type dashboard struct {
	Panels []struct {
		Title   string `json:"title"`
		Targets []struct {
			Expr string `json:"expr"`
		} `json:"targets"`
	} `json:"panels"`
}

func dashboardQueries(t *testing.T) []query {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(chartFiles, "dashboard.json"))
	if err != nil {
		t.Fatal(err)
	}
	var d dashboard
	if err := json.Unmarshal(data, &d); err != nil {
		t.Fatalf("dashboard.json: %v", err)
	}
	var out []query
	for _, p := range d.Panels {
		for _, tg := range p.Targets {
			out = append(out, query{where: "dashboard panel " + p.Title, expr: grafanaVariables.Replace(tg.Expr)})
		}
	}
	return out
}

func allQueries(t *testing.T) []query {
	t.Helper()
	out := dashboardQueries(t)
	for _, r := range alertRules(t) {
		out = append(out, query{where: "alert " + r.Alert, expr: r.Expr})
	}
	return out
}

// metricNames are the metric names an expression selects, and whether each selector reads
// job="metacel".
func metricNames(expr parser.Expr) (names []string, unscoped []string) {
	parser.Inspect(expr, func(n parser.Node, _ []parser.Node) error {
		vs, ok := n.(*parser.VectorSelector)
		if !ok {
			return nil
		}
		name, job := vs.Name, false
		for _, m := range vs.LabelMatchers {
			switch {
			case m.Name == model.MetricNameLabel && m.Type == labels.MatchEqual:
				name = m.Value
			case m.Name == "job" && m.Type == labels.MatchEqual && m.Value == "metacel":
				job = true
			}
		}
		names = append(names, name)
		if !job {
			unscoped = append(unscoped, vs.String())
		}
		return nil
	})
	return names, unscoped
}

// Every query of the dashboard and every alert parses with Prometheus' own parser (the alerts
// as a rule file, as promtool checks one) and reads metacel's job only: the runtime's metric
// names (workqueue_*, process_*) are also other processes'.
func TestEveryQueryParsesAndReadsMetacelsJob(t *testing.T) {
	p := parser.NewParser(parser.Options{})
	qs := allQueries(t)
	if len(qs) < 20 {
		t.Fatalf("%d queries: the dashboard or the alerts were not read", len(qs))
	}
	for _, q := range qs {
		expr, err := p.ParseExpr(q.expr)
		if err != nil {
			t.Errorf("%s: %q: %v", q.where, q.expr, err)
			continue
		}
		names, unscoped := metricNames(expr)
		if len(names) == 0 {
			t.Errorf("%s: %q names no metric", q.where, q.expr)
		}
		for _, s := range unscoped {
			t.Errorf("%s: selector %s does not read job=\"metacel\"", q.where, s)
		}
	}
}

// The metrics the queries name are those testdata/metrics.txt lists, which the e2e test holds
// to the metrics a running runtime serves (go test -update rewrites it).
func TestTheMetricsTheQueriesNameAreListed(t *testing.T) {
	p := parser.NewParser(parser.Options{})
	var all []string
	for _, q := range allQueries(t) {
		expr, err := p.ParseExpr(q.expr)
		if err != nil {
			t.Fatalf("%s: %v", q.where, err)
		}
		names, _ := metricNames(expr)
		all = append(all, names...)
	}
	slices.Sort(all)
	got := strings.Join(slices.Compact(all), "\n") + "\n"
	if *update {
		if err := os.WriteFile(metricList, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(metricList)
	if err != nil {
		t.Fatal(err)
	}
	if got != string(want) {
		t.Errorf("the queries name:\n%s\n%s lists:\n%s\n(go test -update rewrites it)", got, metricList, want)
	}
}

// Every alert has a severity, a summary and a runbook (annotation runbook_url): the section of docs/operating.md's
// "Alerts and their runbooks" of its name, which names no alert the rules do not have.
func TestEveryAlertHasItsRunbook(t *testing.T) {
	data, err := os.ReadFile(operating)
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(data), "\n## Alerts and their runbooks\n")
	if !ok {
		t.Fatalf("%s has no section \"## Alerts and their runbooks\"", operating)
	}
	if i := strings.Index(section, "\n## "); i >= 0 {
		section = section[:i]
	}
	var documented []string
	for _, m := range regexp.MustCompile(`(?m)^### (\S+)$`).FindAllStringSubmatch(section, -1) {
		documented = append(documented, m[1])
	}
	var alerts []string
	for _, r := range alertRules(t) {
		alerts = append(alerts, r.Alert)
		if r.Labels["severity"] == "" || r.Annotations["summary"] == "" {
			t.Errorf("alert %s: no severity label or no summary", r.Alert)
		}
		// runbook_url, the annotation Alertmanager's templates and receivers link to
		if want := "docs/operating.md#" + strings.ToLower(r.Alert); r.Annotations["runbook_url"] != want {
			t.Errorf("alert %s: annotation runbook_url %q, want %q", r.Alert, r.Annotations["runbook_url"], want)
		}
		if _, ok := r.Annotations["runbook"]; ok {
			t.Errorf("alert %s: annotation runbook, which no receiver links to: name it runbook_url", r.Alert)
		}
	}
	slices.Sort(alerts)
	slices.Sort(documented)
	if !slices.Equal(alerts, documented) {
		t.Errorf("alerts:\n  %s\nrunbooks in %s:\n  %s", strings.Join(alerts, "\n  "), operating, strings.Join(documented, "\n  "))
	}
}

// deploy/monitoring ships what the chart ships: the same dashboard, the same alerts.
func TestDeployAndTheChartShipTheSameMonitoring(t *testing.T) {
	read := func(path string) []byte {
		t.Helper()
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		return data
	}
	if !bytes.Equal(read(filepath.Join(deployDir, "dashboard.json")), read(filepath.Join(chartFiles, "dashboard.json"))) {
		t.Errorf("deploy/monitoring/dashboard.json differs from the chart's files/monitoring/dashboard.json")
	}
	var rule struct {
		Spec any `json:"spec"`
	}
	if err := yaml.Unmarshal(read(filepath.Join(deployDir, "prometheusrule.yaml")), &rule); err != nil {
		t.Fatal(err)
	}
	var groups any
	if err := yaml.Unmarshal(read(filepath.Join(chartFiles, "alerts.yaml")), &groups); err != nil {
		t.Fatal(err)
	}
	a, _ := json.Marshal(rule.Spec)
	b, _ := json.Marshal(groups)
	if !bytes.Equal(a, b) {
		t.Errorf("deploy/monitoring/prometheusrule.yaml's spec differs from the chart's files/monitoring/alerts.yaml")
	}
}
