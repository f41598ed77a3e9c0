//go:build e2e

package main

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"time"
)

// Controllers.
const (
	metacel     = "metacel"
	handwritten = "hand-written"
	// controllerRuntime is a Kubebuilder-style controller-runtime operator (test/bench/frameworks)
	controllerRuntime = "controller-runtime"
	// kopfPython is the Kopf seed's handler loop on Debian's python3-kubernetes (test/bench/kopf)
	kopfPython = "Kopf-style Python"
)

// proc is one controller process.
type proc struct {
	kind, bin string
	args      []string // its configuration's flags
	job       string   // the name of its controller in its metrics: the job's ("" is myapp)
	cmd       *exec.Cmd
	exited    chan struct{}
	waitErr   error
	metrics   string // base URL of /metrics (and /debug/pprof/ for metacel with --profiling)
	ready     string // URL of /readyz
	log       string
	started   time.Time

	// impersonated: metacel's policy acts as its ServiceAccount, so metacel runs without
	// --allow-policies-without-service-account
	impersonated bool
}

// start starts the controller against kubeconfig, logging to logPath (appended to); policy is
// metacel's policy file, the other controllers' file of child labels (--pod-labels,
// --child-labels).
func (p *proc) start(kubeconfig, policy, logPath string, resync time.Duration, profiling bool) error {
	metricsAddr, err := freeAddr()
	if err != nil {
		return err
	}
	healthAddr, err := freeAddr()
	if err != nil {
		return err
	}
	args := p.commandLine(kubeconfig, policy, metricsAddr, healthAddr, resync, profiling)
	p.metrics = "http://" + metricsAddr
	p.log = logPath
	logFile, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	bin := p.bin
	if p.kind == kopfPython {
		bin, args = pythonBin, append([]string{p.bin}, args...) // p.bin is the script
	}
	p.cmd = exec.Command(bin, append(args, p.args...)...)
	p.cmd.Stdout, p.cmd.Stderr = logFile, logFile
	p.exited = make(chan struct{})
	p.started = time.Now()
	if err := p.cmd.Start(); err != nil {
		_ = logFile.Close()
		return err
	}
	go func() {
		p.waitErr = p.cmd.Wait()
		_ = logFile.Close()
		close(p.exited)
	}()
	return nil
}

// commandLine is the controller's arguments but its configuration's flags, and sets p.ready.
func (p *proc) commandLine(kubeconfig, policy, metricsAddr, healthAddr string, resync time.Duration, profiling bool) []string {
	switch p.kind {
	case metacel:
		p.ready = "http://" + healthAddr + "/readyz"
		args := []string{"run", "--kubeconfig", kubeconfig, "--policy-dir", policy,
			"--metrics-bind-address", metricsAddr, "--health-probe-bind-address", healthAddr}
		if !p.impersonated {
			// the bench's policy acts as the runtime, as the hand-written controller does
			args = append(args, "--allow-policies-without-service-account")
		}
		if profiling {
			args = append(args, "--profiling")
		}
		return args
	case controllerRuntime:
		// the scaffold's flags (metrics over plain HTTP: the scaffold's HTTPS asks the API server
		// for a TokenReview and a SubjectAccessReview at each scrape), and the bench's two
		p.ready = "http://" + healthAddr + "/readyz"
		return []string{"--kubeconfig", kubeconfig, "--metrics-bind-address", metricsAddr, "--metrics-secure=false",
			"--health-probe-bind-address", healthAddr, "--sync-period", resync.String(), "--child-labels", policy}
	case kopfPython:
		// no resync: Kopf has none
		p.ready = "http://" + metricsAddr + "/readyz"
		return []string{"--kubeconfig", kubeconfig, "--namespace", benchNamespace, "--metrics-bind-address", metricsAddr, "--pod-labels", policy}
	default:
		p.ready = "http://" + metricsAddr + "/readyz"
		return []string{"--kubeconfig", kubeconfig, "--namespace", benchNamespace, "--resync", resync.String(),
			"--metrics-bind-address", metricsAddr, "--pod-labels", policy}
	}
}

// pythonBin is Debian's Python, whose python3-kubernetes the Kopf-style baseline imports.
const pythonBin = "/usr/bin/python3"

func (p *proc) pid() int { return p.cmd.Process.Pid }

// controllerName is the controller's name in its metrics.
func (p *proc) controllerName() string { return orDefault(p.job, myAppJob.name) }

// waitReady waits for /readyz and for the controller's queue metric: the policy runs.
func (p *proc) waitReady(ctx context.Context, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		if err := p.alive(); err != nil {
			return err
		}
		if resp, err := http.Get(p.ready); err == nil {
			_ = resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				if _, _, err := p.scrape(ctx); err == nil {
					return nil
				}
			}
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s not ready after %s (log: %s)", p.kind, timeout, p.log)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// alive fails when the process has exited.
func (p *proc) alive() error {
	select {
	case <-p.exited:
		return fmt.Errorf("%s exited: %w; last lines of %s:\n%s", p.kind, p.waitErr, p.log, tail(p.log, 30))
	default:
		return nil
	}
}

// scrape reads the controller's syncs (controller_runtime_reconcile_total) and queue depth of its
// job's policy (or controller).
func (p *proc) scrape(ctx context.Context) (syncs, depth float64, err error) {
	text, err := p.metricsText(ctx)
	if err != nil {
		return 0, 0, err
	}
	return syncsAndDepth(text, p.kind, p.controllerName())
}

// progress reads what the controller's metrics say of its syncs (progressOf).
func (p *proc) progress(ctx context.Context) (progress, error) {
	text, err := p.metricsText(ctx)
	if err != nil {
		return progress{}, err
	}
	return progressOf(text, p.kind, p.controllerName())
}

// progress is where a controller's syncs stand: syncs completed, and its queue's depth; for
// metacel also the syncs that handled an informer event (metacel_sync_event_latency_seconds'
// count: a resync's syncs handle none) and its policy's generation (metacel_policy_info, one more
// at each new version), and its loads that found the version running
// (metacel_policy_same_version_loads_total).
type progress struct {
	syncs, events, depth float64
	generation           string
	sameVersionLoads     float64
}

// progressOf reads a controller's progress from its /metrics text; name is its controller's (its
// policy's) name.
func progressOf(text, kind, name string) (progress, error) {
	syncs, depth, err := syncsAndDepth(text, kind, name)
	if err != nil {
		return progress{}, err
	}
	pr := progress{syncs: syncs, depth: depth}
	if kind == metacel {
		pr.events, _ = sumSamples(text, "metacel_sync_event_latency_seconds_count", map[string]string{"policy": name})
		pr.generation = sampleLabels(text, "metacel_policy_info", map[string]string{"policy": name})["generation"]
		pr.sameVersionLoads, _ = sumSamples(text, "metacel_policy_same_version_loads_total", map[string]string{"policy": name})
	}
	return pr, nil
}

// decidedAll says whether a controller has synced every one of parents since from: its queue is
// empty and its syncs have grown by parents; metacel's by parents that handled an informer event,
// under another generation of its policy (a new version's controller gets every parent and child
// as an event; its predecessor's resyncs handle none).
//
// A metacel that takes the change for the version it runs (it ignores what the runtime does not
// read of a policy's metadata) has nothing to sync: it has decided once its
// metacel_policy_same_version_loads_total grew.
func decidedAll(kind string, from, now progress, parents int) bool {
	if kind == metacel && now.sameVersionLoads > from.sameVersionLoads {
		return true
	}
	n := float64(parents)
	if now.depth != 0 || now.syncs-from.syncs < n {
		return false
	}
	return kind != metacel || (now.events-from.events >= n && now.generation != from.generation)
}

// syncsAndDepth reads a controller's syncs and queue depth from its /metrics text.
func syncsAndDepth(text, kind, name string) (syncs, depth float64, err error) {
	syncs, _ = sumSamples(text, "controller_runtime_reconcile_total", map[string]string{"controller": name})
	depth, ok := sumSamples(text, "workqueue_depth", map[string]string{"name": name})
	if !ok && kind == controllerRuntime {
		// its priority queue has a depth series for each priority it has held: none before the
		// first item, while its reconcile counts are there from the start
		_, ok = sumSamples(text, "controller_runtime_reconcile_total", map[string]string{"controller": name})
	}
	if !ok {
		return 0, 0, fmt.Errorf("no workqueue_depth{name=%q} yet", name)
	}
	return syncs, depth, nil
}

// gauge reads one metric of the controller, its samples whose labels include match summed.
func (p *proc) gauge(ctx context.Context, metric string, match map[string]string) (float64, error) {
	text, err := p.metricsText(ctx)
	if err != nil {
		return 0, err
	}
	v, ok := sumSamples(text, metric, match)
	if !ok {
		return 0, fmt.Errorf("%s: no %s yet", p.log, metric)
	}
	return v, nil
}

// metricsText is the controller's /metrics.
func (p *proc) metricsText(ctx context.Context) (string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, p.metrics+"/metrics", http.NoBody)
	if err != nil {
		return "", err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return "", err
	}
	defer func() { _ = resp.Body.Close() }()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return "", fmt.Errorf("read %s/metrics: %w", p.metrics, err)
	}
	return string(body), nil
}

// stop sends SIGTERM and waits; after timeout, SIGKILL.
func (p *proc) stop(timeout time.Duration) {
	if p.cmd == nil || p.cmd.Process == nil {
		return
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.exited:
	case <-time.After(timeout):
		_ = p.cmd.Process.Kill()
		<-p.exited
	}
}

// freeAddr is a free loopback address.
func freeAddr() (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer func() { _ = ln.Close() }()
	return ln.Addr().String(), nil
}

// tail is the last n lines of a file.
func tail(path string, n int) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return err.Error()
	}
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
