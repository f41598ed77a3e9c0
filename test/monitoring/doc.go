// Package monitoring holds the monitoring metacel ships (deploy/monitoring and the Helm chart's
// files/monitoring: the alerts, the Grafana dashboard) to Prometheus' own rule and PromQL
// parsers, to each other, and to the runbooks of docs/operating.md. It is a module of its own so
// that Prometheus' dependencies never reach the runtime's go.mod: testdata/metrics.txt lists the
// metrics the queries name, and the e2e test TestMonitoringQueriesNameServedMetrics
// (test/e2e/monitoring_test.go) scrapes a running runtime for each of them.
package monitoring
