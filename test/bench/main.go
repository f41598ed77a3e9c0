//go:build e2e

// Command bench is the side-by-side benchmark of `make bench-e2e`: metacel running the MyApp
// policy (testdata/myapp.yaml) against a minimal hand-written client-go controller for the same
// job (./handwritten), each as its own process on a fresh etcd and kube-apiserver with no other
// writer (hack/control-plane.sh with METACEL_COMPONENTS="etcd kube-apiserver").
//
// Per run: start the controller and wait until its caches have synced; create -parents MyApps in
// a burst; wait (through watches) until every Pod exists and every MyApp's status.podName is set
// (and, for metacel, Synced=True); wait until the API server and the controller are quiet; then an
// idle window longer than a resync period; then, -restarts times, restart the controller (SIGTERM,
// start again) and wait until it has synced every parent; then the no-op policy change (noop.go:
// metacel's policy file rewritten with an annotation nothing reads, a new version that renders
// as before; the others' file of child labels rewritten as it was, and a SIGHUP), timed until
// every parent is synced again, its writes counted (metacel's must be none); then one parent's
// edit at a time (edits.go: -edits MyApps' spec.banner, timed from the edit's response to the
// first write of its Pod, its Recreate's deletion, seen through a watch), first each once the
// previous one's was seen, just after a resync, then one every -edit-spacing from the start of
// the next resync (for the controllers that replace a Pod when its MyApp's spec changes: metacel
// and the controller-runtime one); then the policy change: each controller
// is told that every Pod gains a label (metacel: its policy file rewritten; the hand-written
// controller: its --pod-labels file rewritten and a SIGHUP), and both replace every Pod (delete
// it, see it gone, create it), until every Pod has the label. -skip leaves out any of the phases
// after the restarts. It prints markdown tables, medians over -runs.
//
// The configuration nodes (-configs nodes) runs the same on a control plane that also runs
// kube-scheduler and kwok with one node (METACEL_COMPONENTS="etcd kube-apiserver kube-scheduler
// kwok"), as users run: Pods are bound and Running, and a deletion is graceful (the Pod lingers
// with a deletionTimestamp until kwok, its node, lets it go), the path on which a Recreate waits
// for the old Pod's deletion before it creates. It is a configuration of its own, not a phase of
// the others, because the others' figures are those of an API server with no other writer: the
// scheduler's bindings and kwok's status updates would share the cores and the API server with
// every phase, and their Pods, once bound, go through another path in every phase. A Pod is
// replaced there once it carries the label, is bound and Running; it is created anew once it
// carries the label (the controller's part). kube-scheduler runs with its defaults: its client
// sends at most 50 bindings a second (burst 100), which bounds the time until every Pod is
// Running for both controllers alike. The bench plays kube-controller-manager's one part there,
// not run: it removes the node's not-ready taint once kwok reports it Ready. And it requires the
// control plane's guard that keeps kwok from deleting a Pod that is not being deleted (kwokGuard:
// kwok deletes by name, and a stale job of an old Pod deleted its successor of the same name; a
// kubelet would not).
//
// The configurations of -configs frameworks set metacel, at its defaults, beside the seed operators
// as users write them, each at its framework's defaults and each pair on fresh API servers: MyApp
// and Memcached (Memcached -> Deployment, testdata/memcached.yaml) with controller-runtime, as
// Kubebuilder and the Operator SDK scaffold them (./frameworks, a Go module of its own), and MyApp
// as a Kopf-style Python loop on Debian's python3-kubernetes (./kopf). They are told the policy
// change through a file of child labels and SIGHUP, as the hand-written controller is; a
// Memcached's Deployment is updated in place, not replaced.
//
// With -impersonate, each configuration selected is followed by its twin, <name>-impersonated, in
// every repetition: the same metacel run with its policy acting as its ServiceAccount, as users
// run it (spec.serviceAccountName: metacel impersonates the ServiceAccount for every write, and
// asks a SubjectAccessReview before it reads for the policy), not as the runtime
// (--allow-policies-without-service-account). Before metacel starts, the bench creates what
// `metacel rbac` prints for the policy (the ServiceAccount, its ClusterRole and binding), and waits
// until the API server's authorizer grants it. The twin shares its configuration's baseline run;
// the impersonation table sets each twin's metacel beside its configuration's (impersonate.go).
// The runtime runs as the control plane's admin (system:masters), whose right to impersonate the
// API server grants without consulting RBAC.
//
// Requests are the API server's apiserver_request_total, scraped before and after each window,
// minus the requests of the benchmark's own clients (counted client-side, labelled as the API
// server labels them) and minus the control plane's own (the API server's loopback client, and
// with nodes kube-scheduler and kwok, read from an audit log that records only their users).
// WATCH is left out: the API server counts a watch when it ends. CPU and RSS come from
// /proc/<pid> of the controller process.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
)

// options are the benchmark's flags.
type options struct {
	parents        int
	runs           int
	configs        []string
	replicas       []int // counts of sharded replicas (-configs sharded)
	resync, idle   time.Duration
	quiet          time.Duration
	timeout        time.Duration
	restarts       int
	edits          int           // parents edited in each phase of edits
	editSpacing    time.Duration // between the edits issued during a resync (0: spread over one)
	skip           []string      // phases not run (phases)
	impersonate    bool          // each configuration also with metacel's policy acting as its ServiceAccount
	out            string
	keep           bool
	profile        time.Duration
	profileConfig  string
	profileRestart time.Duration
	metacelBin     string
	metacelRev     string
	handwrittenBin string
	// the baselines of -configs frameworks: the controller-runtime binaries by job, the Python script
	controllerRuntimeBins map[string]string
	kopfScript            string
}

// benchConfig is one configuration: the flags both controllers get.
type benchConfig struct {
	name, desc       string
	metacel, handArg []string
	// handFrom names the configuration whose baseline run this one shares (same flags)
	handFrom string
	// impersonate: metacel's policy acts as its ServiceAccount (impersonate.go); twinOf names the
	// configuration it is the twin of, the same otherwise
	impersonate bool
	twinOf      string
	// nodes: the control plane also runs kube-scheduler and kwok with benchNodes
	nodes bool
	// job: what the controllers do (nil: MyApp -> Pod); baseline: the controller metacel is set
	// beside ("": the hand-written one)
	job      *job
	baseline string
}

// baselineOf is the controller metacel's rows are compared with.
func (c benchConfig) baselineOf() string { return orDefault(c.baseline, handwritten) }

// controllers are the configuration's controllers in the order they run: the baseline, then metacel.
func (c benchConfig) controllers() []string { return []string{c.baselineOf(), metacel} }

// nodesConfig is the configuration on a control plane with nodes.
const nodesConfig = "nodes"

func configurations(metacelDefaults string) []benchConfig {
	equal := []string{"--workers=5", "--kube-api-qps=100", "--kube-api-burst=200"}
	unthrottled := []string{"--workers=5", "--kube-api-qps=-1"}
	return append([]benchConfig{
		{name: "equal", desc: "both: QPS 100, burst 200, 5 workers", metacel: equal, handArg: equal},
		{name: "unthrottled", desc: "both: no client-side rate limit, 5 workers", metacel: unthrottled, handArg: unthrottled},
		{name: "defaults", desc: "metacel: its defaults (" + metacelDefaults + "); hand-written: unthrottled, 5 workers",
			metacel: nil, handArg: unthrottled, handFrom: "unthrottled"},
		{name: "json", desc: "both unthrottled, 5 workers; the hand-written controller sends and watches its Pods as JSON instead of protobuf (metacel sends them as JSON, watches them as protobuf)",
			metacel: unthrottled, handArg: append(slices.Clone(unthrottled), "--pods-as-json")},
		{name: "conditions", desc: "both unthrottled, 5 workers; the hand-written controller's status also carries observedGeneration and the Synced and Ready conditions, as metacel's contract requires, in its one PUT",
			metacel: unthrottled, handArg: append(slices.Clone(unthrottled), "--conditions")},
		{name: nodesConfig, desc: "both unthrottled, 5 workers, on a control plane that also runs kube-scheduler (its defaults: 50 bindings/s) and kwok with one node: Pods bound and Running, deleted gracefully",
			metacel: unthrottled, handArg: unthrottled, nodes: true},
	}, frameworkConfigurations(metacelDefaults)...)
}

// selectConfigs are the configurations named, in their order.
func selectConfigs(all []benchConfig, names []string) []benchConfig {
	var selected []benchConfig
	for _, c := range all {
		if slices.Contains(names, c.name) {
			selected = append(selected, c)
		}
	}
	return selected
}

// frameworksConfig names the configurations that set metacel, at its defaults, beside the
// operators as users write them, each at its framework's defaults.
const frameworksConfig = "frameworks"

func frameworkConfigurations(metacelDefaults string) []benchConfig {
	atDefaults := "metacel at its defaults (" + metacelDefaults + ")"
	return []benchConfig{
		{name: "myapp-controller-runtime", job: myAppJob, baseline: controllerRuntime,
			desc: "MyApp; " + atDefaults + "; controller-runtime " + controllerRuntimeVersion + " as Kubebuilder scaffolds it (test/bench/frameworks/myapp): the manager's defaults (1 reconcile at a time, no client-side rate limit), a typed MyApp, Owns(Pod), status.podName and an Available condition in one status Update"},
		{name: "memcached-controller-runtime", job: memcachedJob, baseline: controllerRuntime,
			desc: "Memcached -> Deployment; " + atDefaults + " running policies/memcached.yaml; controller-runtime " + controllerRuntimeVersion + " as the Operator SDK tutorial writes it (test/bench/frameworks/memcached): the manager's defaults, Owns(Deployment), the conditions Available, Progressing, Degraded set with meta.SetStatusCondition, one status Update"},
		{name: "myapp-kopf", job: myAppJob, baseline: kopfPython,
			desc: "MyApp; " + atDefaults + "; the Kopf seed's handler loop on Debian's python3-kubernetes (test/bench/kopf/myapp.py; Kopf itself cannot be installed here): one watch of the MyApps, a handler per event in Kopf's thread pool (min(32, CPUs + 4)), the Pod created with CoreV1Api, one status merge patch per parent; no Pod cache, no resync"},
	}
}

// controllerRuntimeVersion is the controller-runtime of test/bench/frameworks/go.mod.
const controllerRuntimeVersion = "v0.25.2"

// expandConfigs replaces frameworksConfig with the configurations it names.
func expandConfigs(configs []string) []string {
	var out []string
	for _, c := range configs {
		if c != frameworksConfig {
			out = append(out, c)
			continue
		}
		for _, f := range frameworkConfigurations("") {
			out = append(out, f.name)
		}
	}
	return out
}

func main() {
	var o options
	var configs string
	flag.IntVar(&o.parents, "parents", 1000, "MyApps created in the burst")
	flag.IntVar(&o.runs, "runs", 1, "repetitions of each configuration; the table shows medians")
	flag.StringVar(&configs, "configs", "equal,unthrottled,defaults,"+nodesConfig, "configurations to run: equal, unthrottled, defaults, json, conditions, "+nodesConfig+" (metacel against the hand-written controller; "+nodesConfig+" on a control plane with kube-scheduler and a kwok node); "+frameworksConfig+" (metacel against the seed operators as users write them: myapp-controller-runtime, memcached-controller-runtime, myapp-kopf, each also on its own); sharded (metacel --shards=auto as each count of -replicas, on an API server with "+shardGates+"); "+writeCostConfig+" (the control plane's CPU per write of each kind the two controllers send)")
	replicas := flag.String("replicas", "1,3", "with -configs sharded: the counts of sharded replicas to run, each on a fresh API server (1: the baseline of the ratios)")
	flag.DurationVar(&o.resync, "resync", 30*time.Second, "resync period of both controllers")
	flag.DurationVar(&o.idle, "idle", 45*time.Second, "idle window after converging (longer than -resync)")
	flag.DurationVar(&o.quiet, "quiet", 3*time.Second, "a window ends once the API server and the controller have been quiet this long")
	flag.IntVar(&o.restarts, "restarts", 5, "restarts over the converged parents per run; the run's restart time is their median")
	flag.IntVar(&o.edits, "edits", 100, "parents edited one at a time while idle, and again during a resync, each edit timed to its child's write; 0: none")
	flag.DurationVar(&o.editSpacing, "edit-spacing", 0, "time between the edits issued during a resync (0: the controller's time to sync every parent, of its no-op change, spread over -edits)")
	skip := flag.String("skip", "", "phases not run after the restarts, comma separated: "+strings.Join(phases, ", "))
	flag.BoolVar(&o.impersonate, "impersonate", false, "follow each configuration (not sharded, "+writeCostConfig+") with its twin <name>"+impersonatedSuffix+": metacel's policy acting as its ServiceAccount (spec.serviceAccountName, the RBAC of `metacel rbac` created first), without --allow-policies-without-service-account; the twin shares the baseline's run")
	flag.DurationVar(&o.timeout, "timeout", 30*time.Minute, "longest converge")
	flag.StringVar(&o.out, "out", "bin/bench-e2e.md", "file for the table and each run's details")
	flag.BoolVar(&o.keep, "keep", false, "keep each run's directory (control plane state and logs)")
	flag.DurationVar(&o.profile, "profile", 0, "take CPU profiles this long from the burst on, of metacel (--profiling) and of kube-apiserver (under both controllers), and metacel's heap profile at the end of the idle window (first run of -profile-config); 0: none")
	flag.DurationVar(&o.profileRestart, "profile-restart", 0, "with -profile, also take CPU profiles this long from the first restart on: of kube-apiserver (under both controllers), and of metacel from when its restarted process serves (--profiling); 0: none")
	flag.StringVar(&o.profileConfig, "profile-config", "equal", "configurations (comma separated) whose first run is profiled")
	flag.StringVar(&o.metacelBin, "metacel", "", "metacel binary (default: go build ./cmd/metacel of the work tree, or of -metacel-rev)")
	flag.StringVar(&o.metacelRev, "metacel-rev", "", "build metacel from this git revision (git archive) instead of the work tree, e.g. HEAD")
	flag.StringVar(&o.handwrittenBin, "handwritten", "", "hand-written controller binary (default: go build ./test/bench/handwritten)")
	flag.Parse()
	o.configs = expandConfigs(strings.Split(configs, ","))
	var err error
	if o.skip, err = parseSkip(*skip); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(2)
	}
	if o.replicas, err = parseReplicas(*replicas); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(2)
	}
	if o.idle <= o.resync {
		fmt.Fprintln(os.Stderr, "bench: -idle must be longer than -resync")
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	err = run(ctx, o)
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}

// The phases that follow the restarts, in their order, each of which -skip may leave out.
const (
	phaseNoop        = "noop"         // the no-op policy change
	phaseEditsIdle   = "edits-idle"   // the edits while idle
	phaseEditsResync = "edits-resync" // the edits during a resync
	phaseChange      = "change"       // the policy change that replaces every child
)

var phases = []string{phaseNoop, phaseEditsIdle, phaseEditsResync, phaseChange}

// parseSkip reads -skip: phases, comma separated.
func parseSkip(s string) ([]string, error) {
	if s == "" {
		return nil, nil
	}
	skip := strings.Split(s, ",")
	for _, p := range skip {
		if !slices.Contains(phases, p) {
			return nil, fmt.Errorf("-skip: no phase %q (phases: %s)", p, strings.Join(phases, ", "))
		}
	}
	return skip, nil
}

// skipped says whether -skip leaves out a phase.
func (b *bench) skipped(phase string) bool { return slices.Contains(b.o.skip, phase) }

// bench is what every run shares.
type bench struct {
	o      options
	repo   string
	binDir string
	policy string // the MyApp policy file, resync applied
	sample *unstructured.Unstructured
	// by job: the policy file, resync applied, and the sample
	policies map[string]string
	samples  map[string]*unstructured.Unstructured
	version  string // the API server's
	// built names what metacel was built from, read when it was built (the work tree may move on
	// during a long run), or the binary given (-metacel); "" when built from -metacel-rev
	built string
}

func run(ctx context.Context, o options) error {
	repo, err := repoRoot()
	if err != nil {
		return err
	}
	b := &bench{o: o, repo: repo}
	if b.binDir, err = os.MkdirTemp("", "metacel-bench-bin-"); err != nil {
		return err
	}
	defer func() { _ = os.RemoveAll(b.binDir) }()
	selected := b.selectConfigs(configurations(""))
	if err := b.build(ctx, selected); err != nil {
		return err
	}
	if err := b.readJobs(jobsOf(selected)); err != nil {
		return err
	}
	defaults := metacelDefaults(b.o.metacelBin)
	selected = b.selectConfigs(configurations(defaults)) // their descriptions name metacel's defaults
	sharded := slices.Contains(o.configs, shardedConfig)
	writeCosts := slices.Contains(o.configs, writeCostConfig)
	if len(selected) == 0 && !sharded && !writeCosts {
		return fmt.Errorf("no configuration among %q", o.configs)
	}
	started := time.Now()
	logf("%d parents, configurations %s, %d run(s) each; metacel run's defaults: %s", o.parents, strings.Join(o.configs, ","), o.runs, defaults)

	results := map[string][]*result{}            // controller/config -> one per run
	shardedResults := map[int][]*shardedResult{} // replicas -> one per run
	var details []string
	for rep := range o.runs {
		for _, c := range selected {
			for _, ctl := range c.controllers() {
				key := ctl + "/" + c.name
				if ctl != metacel && c.handFrom != "" && slices.ContainsFunc(selected, func(s benchConfig) bool { return s.name == c.handFrom }) {
					shared := *results[ctl+"/"+c.handFrom][rep]
					shared.config = c.name
					shared.sharedWith = orDefault(shared.sharedWith, c.handFrom)
					results[key] = append(results[key], &shared)
					continue
				}
				logf("run %d/%d, %s, %s (%s)", rep+1, o.runs, c.name, ctl, c.desc)
				r, err := b.runOne(ctx, ctl, c, rep)
				if err != nil {
					return fmt.Errorf("%s, %s, run %d: %w", ctl, c.name, rep+1, err)
				}
				logf("  %s", r.oneLine())
				results[key] = append(results[key], r)
				details = append(details, r.details())
			}
		}
		if sharded {
			more, err := b.runShardedRuns(ctx, rep, shardedResults)
			if err != nil {
				return err
			}
			details = append(details, more...)
		}
	}
	title := fmt.Sprintf("metacel vs a hand-written controller: %d MyApps", o.parents)
	if !slices.ContainsFunc(selected, func(c benchConfig) bool { return c.baseline == "" }) {
		title = fmt.Sprintf("metacel vs the operators as users write them: %d parents", o.parents)
	}
	var table string
	if len(selected) > 0 {
		table = b.table(selected, results)
	} else {
		title = fmt.Sprintf("metacel, sharded replicas: %d MyApps", o.parents)
	}
	if sharded {
		table += b.shardedTable(shardedResults)
	}
	if writeCosts {
		costs, err := b.runWriteCost(ctx)
		if err != nil {
			return fmt.Errorf("%s: %w", writeCostConfig, err)
		}
		if len(selected) == 0 && !sharded {
			title = fmt.Sprintf("What each write costs the control plane: %d of each", o.parents)
		}
		table += costs
	}
	header := b.header(title, defaults, len(details) > 0)
	fmt.Println(header)
	fmt.Println(table)
	doc := header + "\n" + table + "\n" + fmt.Sprintf("Machine time: %s; load average at the end %s.\n", time.Since(started).Round(time.Second), loadAvg())
	if len(details) > 0 {
		doc += "\n## Runs\n\n" + strings.Join(details, "\n")
	}
	out := o.out
	if !filepath.IsAbs(out) {
		out = filepath.Join(repo, out)
	}
	if err := os.MkdirAll(filepath.Dir(out), 0o755); err != nil {
		return err
	}
	if err := os.WriteFile(out, []byte(doc), 0o644); err != nil {
		return err
	}
	logf("wrote %s", out)
	return nil
}

// selectConfigs are the configurations of -configs among all, each followed by its impersonated
// twin with -impersonate.
func (b *bench) selectConfigs(all []benchConfig) []benchConfig {
	selected := selectConfigs(all, b.o.configs)
	if b.o.impersonate {
		selected = withImpersonatedTwins(selected)
	}
	return selected
}

// runOne measures one controller in one configuration on a fresh control plane.
func (b *bench) runOne(ctx context.Context, ctl string, c benchConfig, rep int) (_ *result, err error) {
	o := b.o
	profiling := b.profiled(ctl, c, rep)
	var env []string
	if profiling {
		env = append(env, "METACEL_APISERVER_PROFILING=true")
	}
	var nodes []string
	if c.nodes {
		nodes = benchNodes
	}
	s, err := b.newStage(ctx, c.jobOf(), ctl, nodes, env...)
	if err != nil {
		return nil, err
	}
	defer func() { s.close(err != nil || o.keep) }()
	cl, own, dir := s.cl, s.own, s.dir
	p, policy, err := b.newProc(ctl, c, dir)
	if err != nil {
		return nil, err
	}
	r := &result{controller: ctl, config: c.name, parents: o.parents, flags: strings.Join(p.args, " "), nodes: c.nodes}
	if p.impersonated {
		if r.actsAs, err = b.grantPolicy(ctx, cl, policy); err != nil {
			return nil, err
		}
	}
	wStart, err := cl.window(ctx, own)
	if err != nil {
		return nil, err
	}
	logPath := filepath.Join(dir, "logs", "controller.log")
	if err := p.start(cl.kubeconfig(), policy, logPath, o.resync, profiling && ctl == metacel); err != nil {
		return nil, err
	}
	defer p.stop(30 * time.Second)
	if err := p.waitReady(ctx, 60*time.Second); err != nil {
		return nil, err
	}
	// the controller's start-up requests (lists, its ledger Lease) are not the converge's
	w0, err := b.waitQuiet(ctx, cl, own, work, p)
	if err != nil {
		return nil, err
	}
	if r.startup, _, err = cl.attribute(wStart, w0); err != nil {
		return nil, err
	}
	p0, server0 := readProc(p.pid()), cl.serverCPU()
	r.rssStart = p0.RSS

	// converge
	var profileDone <-chan string
	var serverProfileDone <-chan *serverProfile
	if profiling {
		serverProfileDone = inBackground(func() *serverProfile { return b.serverProfile(ctx, cl, ctl, c.name, o.profile) })
	}
	if profiling && ctl == metacel {
		profileDone = inBackground(func() string {
			return b.profile(ctx, p, c.name, "cpu", fmt.Sprintf("profile?seconds=%d", int(o.profile.Seconds())))
		})
	}
	start, err := b.burst(ctx, s, r, p)
	if err != nil {
		return nil, err
	}
	if len(nodes) > 0 {
		if err := b.waitTracked(ctx, s.tr, s.tr.allRunning, p); err != nil {
			return nil, err
		}
		r.running = s.tr.runningAt.Sub(start)
	}
	w1, err := b.waitQuiet(ctx, cl, own, work, p)
	if err != nil {
		return nil, err
	}
	r.settled = w1.at.Sub(start)
	p1 := readProc(p.pid())
	r.cpu, r.serverCPU = p1.CPU-p0.CPU, cl.serverCPU()-server0
	if r.converged, r.apiserver, err = cl.attribute(w0, w1); err != nil {
		return nil, err
	}

	// idle: longer than a resync period
	select {
	case <-ctx.Done():
		return nil, ctx.Err()
	case <-time.After(o.idle):
	}
	w2, err := cl.window(ctx, own, p)
	if err != nil {
		return nil, err
	}
	if r.idle, _, err = cl.attribute(w1, w2); err != nil {
		return nil, err
	}
	r.idleSyncs = w2.syncs - w1.syncs
	if r.events, _, err = cl.attribute(w0, w2); err != nil {
		return nil, err
	}
	p2 := readProc(p.pid())
	r.rss, r.rssNow, r.cpuIdle = p2.HWM, p2.RSS, p2.CPU-p1.CPU
	r.rssFile, r.rssAnon = p2.File, p2.Anon
	r.binaryPages = binaryPagesOf(p.pid())
	if profiling && ctl == metacel {
		r.heap = b.profile(ctx, p, c.name, "heap", "heap?gc=1", "-sample_index=inuse_space")
	}

	// restart over the converged parents, o.restarts times: one restart takes 0.1-0.3 s at 1,000
	// parents, where a scrape's 20 ms and the machine's noise are a large part of it
	for i := range o.restarts {
		var restartProfileDone <-chan *serverProfile
		if profiling && i == 0 && o.profileRestart > 0 {
			restartProfileDone = inBackground(func() *serverProfile {
				return b.serverProfile(ctx, cl, ctl, c.name+"-restart", o.profileRestart)
			})
		}
		profileMetacel := profiling && i == 0 && o.profileRestart > 0 && ctl == metacel
		if err := b.restartOnce(ctx, cl, own, p, policy, logPath, r, profileMetacel, c.name); err != nil {
			return nil, err
		}
		if restartProfileDone != nil {
			r.restartServerProfile = <-restartProfileDone
		}
	}
	r.restart, r.restartCPU, r.restartServerCPU = medianRestart(r.restarts)

	// a policy change that renders every child and status as before
	if !b.skipped(phaseNoop) {
		if r.noop, err = b.noopChange(ctx, s, p, policy); err != nil {
			return nil, err
		}
	}
	// edits of single parents, during a resync and while idle
	if err := b.measureEdits(ctx, s, p, r); err != nil {
		return nil, err
	}
	// a policy change that replaces every parent's Pod
	if !b.skipped(phaseChange) {
		if err := b.changePolicy(ctx, s, p, policy, r); err != nil {
			return nil, err
		}
	}
	if profileDone != nil {
		r.profile = <-profileDone
	}
	if serverProfileDone != nil {
		r.serverProfile = <-serverProfileDone
	}
	return r, nil
}

// inBackground runs f in a goroutine; its result arrives on the channel returned.
func inBackground[T any](f func() T) <-chan T {
	done := make(chan T, 1)
	go func() { done <- f() }()
	return done
}

// profiled says whether ctl's run of c in repetition rep is profiled: the first repetition of
// -profile-config, and the baseline run that -profile-config shares.
func (b *bench) profiled(ctl string, c benchConfig, rep int) bool {
	if b.o.profile <= 0 || rep != 0 {
		return false
	}
	profiled := strings.Split(b.o.profileConfig, ",")
	if slices.Contains(profiled, c.name) {
		return true
	}
	return ctl != metacel && slices.ContainsFunc(withImpersonatedTwins(configurations("")), func(p benchConfig) bool {
		return slices.Contains(profiled, p.name) && p.handFrom == c.name
	})
}

// serverProfile takes kube-apiserver's CPU profile for d from now on, beside -out; nil when it
// fails (logged). what names it: the configuration, and what part of the run.
func (b *bench) serverProfile(ctx context.Context, cl *cluster, ctl, what string, d time.Duration) *serverProfile {
	path := strings.TrimSuffix(b.outPath(), ".md") + "-" + strings.ReplaceAll(ctl, " ", "-") + "-" + what + "-kube-apiserver-cpu.pprof"
	p, err := fetchServerProfile(ctx, cl, d, path)
	if err != nil {
		logf("  %v", err)
		return nil
	}
	return p
}

// restartOnce stops the converged controller (SIGTERM) and starts it again, and adds to r how
// long it took to re-sync every parent, its CPU and the control plane's until then, and its
// requests and syncs until quiet; with profile, a CPU profile of the restarted process (config
// names its file) from when it serves.
func (b *bench) restartOnce(ctx context.Context, cl *cluster, own *counter, p *proc, policy, logPath string, r *result, profile bool, config string) error {
	p.stop(30 * time.Second)
	w3, err := cl.window(ctx, own)
	if err != nil {
		return err
	}
	server3, checks3 := cl.serverCPU(), cl.cacheChecks(ctx)
	if err := p.start(cl.kubeconfig(), policy, logPath, b.o.resync, profile); err != nil {
		return err
	}
	var profileDone <-chan string
	if profile {
		profileDone = inBackground(func() string {
			return b.profileOnceServing(ctx, p, config, "restart-cpu", fmt.Sprintf("profile?seconds=%d", int(b.o.profileRestart.Seconds())))
		})
	}
	if err := b.waitResynced(ctx, p); err != nil {
		return err
	}
	r.restarts = append(r.restarts, restart{
		took: time.Since(p.started), cpu: readProc(p.pid()).CPU, serverCPU: cl.serverCPU() - server3,
		cacheChecks: cl.cacheChecks(ctx) - checks3,
	})
	w4, err := b.waitQuiet(ctx, cl, own, work, p)
	if err != nil {
		return err
	}
	restarted, _, err := cl.attribute(w3, w4)
	if err != nil {
		return err
	}
	r.restarted = r.restarted.add(restarted, 1)
	r.restartSyncs = max(r.restartSyncs, w4.syncs)
	if profileDone != nil { // after the restart's figures: the profile may outlast the restart
		r.restartProfile = <-profileDone
	}
	return nil
}

// newProc is ctl's process in configuration c (not started), and the file the policy change
// rewrites: metacel's policy (the run's own copy), the other controllers' file of child labels
// (no labels until then), in the run's directory dir.
func (b *bench) newProc(ctl string, c benchConfig, dir string) (*proc, string, error) {
	j := c.jobOf()
	p := &proc{kind: ctl, job: j.name}
	policy := filepath.Join(dir, "policy", "child-labels.yaml")
	switch ctl {
	case metacel:
		p.bin, p.args, p.impersonated = b.o.metacelBin, c.metacel, c.impersonate
		policy = filepath.Join(dir, "policy", j.file)
		if c.impersonate {
			return p, policy, writeFile(policy, func() ([]byte, error) { return policyActingAs(b.policies[j.name], j.name) })
		}
		return p, policy, copyFile(b.policies[j.name], policy)
	case controllerRuntime:
		p.bin = b.o.controllerRuntimeBins[j.name]
	case kopfPython:
		p.bin = b.o.kopfScript
	default:
		p.bin, p.args = b.o.handwrittenBin, c.handArg
	}
	return p, policy, writeFile(policy, func() ([]byte, error) { return podLabelsFile(nil) })
}

// stage is a run's fresh control plane (the job's CRD and the namespaces installed) and the load
// client that creates the parents and follows them through watches.
type stage struct {
	job          *job
	dir          string
	cl           *cluster
	own          *counter // the benchmark's clients' requests
	load         *rest.Config
	dyn          dynamic.Interface
	tr           *tracker
	names        []string // of the parents; each has a child (job.child.nameOf)
	stopTracking context.CancelFunc
}

// newStage starts a control plane in a new directory for job j (with kube-scheduler and kwok when
// nodes are given; env: more variables of hack/control-plane.sh) and the tracker of the parents
// done as ctl's are judged.
func (b *bench) newStage(ctx context.Context, j *job, ctl string, nodes []string, env ...string) (_ *stage, err error) {
	s := &stage{job: j, own: &counter{c: counts{}}}
	if s.dir, err = os.MkdirTemp("", "metacel-bench-"); err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			s.close(true)
		}
	}()
	if s.cl, err = startCluster(ctx, b.repo, s.dir, s.own, nodes, env...); err != nil {
		return nil, err
	}
	if b.version == "" {
		b.version = s.cl.serverVersion()
	}
	if err := s.cl.setup(ctx, b.repo, j); err != nil {
		return nil, err
	}
	s.names = make([]string, b.o.parents)
	children := make(map[string]bool, b.o.parents)
	for i := range s.names {
		s.names[i] = fmt.Sprintf("app-%05d", i)
		children[j.child.nameOf(s.names[i])] = true
	}
	var trackCtx context.Context
	trackCtx, s.stopTracking = context.WithCancel(ctx)
	s.load = rest.CopyConfig(s.cl.config)
	s.load.UserAgent = "metacel-bench-load"
	if s.tr, err = newTracker(trackCtx, s.load, benchNamespace, j, b.o.parents, j.isDone(ctl), func(p string) bool { return children[p] }); err != nil {
		return nil, err
	}
	if s.dyn, err = dynamic.NewForConfig(s.load); err != nil {
		return nil, err
	}
	return s, nil
}

// close stops the tracker and the control plane, and removes the directory unless keep.
func (s *stage) close(keep bool) {
	if s.stopTracking != nil {
		s.stopTracking()
	}
	if s.cl != nil {
		s.cl.stop()
	}
	if keep {
		logf("  kept %s (logs, control plane state)", s.dir)
		return
	}
	_ = os.RemoveAll(s.dir)
}

// burst creates the parents and waits until the controllers have converged them; it sets r's
// created and converge, and returns the burst's start.
func (b *bench) burst(ctx context.Context, s *stage, r *result, procs ...*proc) (time.Time, error) {
	start := time.Now()
	if err := createParents(ctx, s.dyn, s.job.parent, b.samples[s.job.name], benchNamespace, s.names); err != nil {
		return start, err
	}
	r.created = time.Since(start)
	if err := b.waitConverged(ctx, s.tr, procs...); err != nil {
		return start, err
	}
	r.converge = s.tr.doneAt.Sub(start)
	return start, nil
}

// waitConverged waits until the tracker has seen every parent done and every Pod, failing when
// one of procs exits.
func (b *bench) waitConverged(ctx context.Context, tr *tracker, procs ...*proc) error {
	return b.waitTracked(ctx, tr, tr.done, procs...)
}

// waitTracked waits until done (one of tr's channels) is closed, failing when one of procs
// exits.
func (b *bench) waitTracked(ctx context.Context, tr *tracker, done <-chan struct{}, procs ...*proc) error {
	deadline := time.After(b.o.timeout)
	tick := time.NewTicker(10 * time.Second)
	defer tick.Stop()
	exitCtx, stop := context.WithCancel(ctx)
	defer stop()
	exited := firstExit(exitCtx, procs)
	for {
		select {
		case <-done:
			return nil
		case <-ctx.Done():
			return ctx.Err()
		case <-deadline:
			return fmt.Errorf("not converged after %s: %s (logs: %s)", b.o.timeout, tr.state(), logsOf(procs))
		case <-exited:
			return allAlive(procs)
		case <-tick.C:
			logf("  %s", tr.state())
		}
	}
}

// firstExit is closed when one of procs exits (or ctx ends).
func firstExit(ctx context.Context, procs []*proc) <-chan struct{} {
	exited := make(chan struct{})
	var once sync.Once
	for _, p := range procs {
		go func() {
			select {
			case <-p.exited:
				once.Do(func() { close(exited) })
			case <-ctx.Done():
			}
		}()
	}
	return exited
}

// allAlive fails when one of procs has exited.
func allAlive(procs []*proc) error {
	for _, p := range procs {
		if err := p.alive(); err != nil {
			return err
		}
	}
	return nil
}

func logsOf(procs []*proc) string {
	logs := make([]string, len(procs))
	for i, p := range procs {
		logs[i] = p.log
	}
	return strings.Join(logs, ", ")
}

// waitResynced waits until a restarted controller has synced every parent: its syncs reach the
// parents and its queue is empty.
func (b *bench) waitResynced(ctx context.Context, p *proc) error {
	deadline := time.Now().Add(b.o.timeout)
	for {
		if err := p.alive(); err != nil {
			return err
		}
		if syncs, depth, err := p.scrape(ctx); err == nil && syncs >= float64(b.o.parents) && depth == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("restart: not re-synced after %s (log: %s)", b.o.timeout, p.log)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// window is a scrape that opens or closes a measuring window.
type window struct {
	at    time.Time
	api   counts // apiserver_request_total
	own   counts // the benchmark's clients'
	syncs float64
	depth float64
}

// window scrapes the API server and procs (their syncs and queue depths summed).
func (cl *cluster) window(ctx context.Context, own *counter, procs ...*proc) (window, error) {
	w := window{}
	for _, p := range procs {
		syncs, depth, err := p.scrape(ctx)
		if err != nil {
			return w, fmt.Errorf("scrape %s (%s): %w", p.kind, p.log, err)
		}
		w.syncs, w.depth = w.syncs+syncs, w.depth+depth
	}
	api, err := cl.metrics(ctx)
	if err != nil {
		return w, err
	}
	w.at, w.api, w.own = time.Now(), api, own.snapshot()
	return w, nil
}

// attribute returns the controller's requests between two windows: the API server's count less
// the benchmark's clients' and the control plane's own (the API server's, and with nodes the
// scheduler's and kwok's, from its audit log); and the latter.
func (cl *cluster) attribute(from, to window) (ctl counts, controlPlane byUser, err error) {
	if controlPlane, err = auditCounts(cl.audit, from.at, to.at); err != nil {
		return nil, nil, err
	}
	ctl = to.api.minus(from.api).minus(to.own.minus(from.own)).minus(controlPlane.all())
	for k, v := range ctl {
		if v < 0 && requests(k) {
			logf("  warning: %s: %v after attribution (the API server counted fewer than were taken out)", k, v)
		}
	}
	return ctl, controlPlane, nil
}

// waitQuiet waits until neither the API server's counts of the counted requests (work: WATCH and
// events aside) nor the syncs of procs have moved for -quiet, and their queues are empty.
func (b *bench) waitQuiet(ctx context.Context, cl *cluster, own *counter, counted func(reqKey) bool, procs ...*proc) (window, error) {
	deadline := time.Now().Add(b.o.timeout)
	last, err := cl.window(ctx, own, procs...)
	if err != nil {
		return last, err
	}
	since, reported := last.at, time.Now()
	for {
		select {
		case <-ctx.Done():
			return last, ctx.Err()
		case <-time.After(500 * time.Millisecond):
		}
		if err := allAlive(procs); err != nil {
			return last, err
		}
		w, err := cl.window(ctx, own, procs...)
		if err != nil {
			return last, err
		}
		if w.api.total(counted) != last.api.total(counted) || w.syncs != last.syncs || w.depth != 0 {
			since = w.at
		}
		if time.Since(reported) >= 30*time.Second {
			logf("  waiting for quiet: the API server at %s requests, the controller at %s syncs", num(w.api.total(counted)), num(w.syncs))
			reported = time.Now()
		}
		last = w
		if w.at.Sub(since) >= b.o.quiet {
			return w, nil
		}
		if time.Now().After(deadline) {
			logf("  warning: not quiet after %s; measuring anyway", b.o.timeout)
			return w, nil
		}
	}
}

// profile fetches a profile of metacel (/debug/pprof/<path>) and writes it, and `go tool pprof
// -top` of it, beside -out; it returns the text file's path.
func (b *bench) profile(ctx context.Context, p *proc, config, kind, path string, pprofArgs ...string) string {
	out := strings.TrimSuffix(b.outPath(), ".md") + "-metacel-" + config + "-" + kind
	if err := download(ctx, p.metrics+"/debug/pprof/"+path, out+".pprof"); err != nil {
		logf("  %s profile: %v", kind, err)
		return ""
	}
	args := append(append([]string{"tool", "pprof", "-top", "-nodecount=40"}, pprofArgs...), p.bin, out+".pprof")
	top, err := exec.CommandContext(ctx, "go", args...).CombinedOutput()
	if err != nil {
		logf("  pprof: %v: %s", err, top)
		return ""
	}
	if err := os.WriteFile(out+".top.txt", top, 0o644); err != nil {
		return ""
	}
	return out + ".top.txt"
}

// profileOnceServing is profile, asked as soon as the process just started serves its metrics
// (polled every 20 ms for up to 30 s), so that a profile of its start misses as little as it can.
func (b *bench) profileOnceServing(ctx context.Context, p *proc, config, kind, path string, pprofArgs ...string) string {
	err := wait.PollUntilContextTimeout(ctx, 20*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		_, err := p.metricsText(ctx)
		return err == nil, nil
	})
	if err != nil {
		logf("  %s profile: %s/metrics not served: %v", kind, p.metrics, err)
		return ""
	}
	return b.profile(ctx, p, config, kind, path, pprofArgs...)
}

func (b *bench) outPath() string {
	if filepath.IsAbs(b.o.out) {
		return b.o.out
	}
	return filepath.Join(b.repo, b.o.out)
}

// build builds the controllers unless given: metacel, the hand-written controller, and those of
// the configurations selected (the controller-runtime baselines, the Python one's interpreter).
func (b *bench) build(ctx context.Context, selected []benchConfig) error {
	if err := b.buildMain(ctx); err != nil {
		return err
	}
	for _, c := range selected {
		switch c.baseline {
		case controllerRuntime:
			if err := b.buildControllerRuntime(ctx, c.jobOf()); err != nil {
				return err
			}
		case kopfPython:
			if err := ensurePythonKubernetes(ctx); err != nil {
				return err
			}
			b.o.kopfScript = filepath.Join(b.repo, "test", "bench", "kopf", "myapp.py")
		}
	}
	return nil
}

// buildMain builds metacel and the hand-written controller unless given.
func (b *bench) buildMain(ctx context.Context) error {
	builds := []struct {
		bin  *string
		name string
		args []string
	}{
		{&b.o.metacelBin, "metacel", []string{"build", "-trimpath", "-o", filepath.Join(b.binDir, "metacel"), "./cmd/metacel"}},
		{&b.o.handwrittenBin, "handwritten", []string{"build", "-tags", "e2e", "-trimpath", "-o", filepath.Join(b.binDir, "handwritten"), "./test/bench/handwritten"}},
	}
	for i, bd := range builds {
		if *bd.bin != "" {
			if i == 0 { // its commit is unknown: the work tree's is no more than a clue
				b.built = "the binary " + *bd.bin + " given with -metacel (the work tree at the start: " + gitDescribe(b.repo, "HEAD") + ")"
			}
			continue
		}
		dir := b.repo
		if i == 0 && b.o.metacelRev != "" {
			var err error
			if dir, err = b.archive(ctx, b.o.metacelRev); err != nil {
				return err
			}
			logf("in git archive %s:", b.o.metacelRev)
		}
		if i == 0 && b.o.metacelRev == "" {
			b.built = gitDescribe(b.repo, "HEAD") + ", the work tree as it was when built (`git describe --dirty`: " + gitDescribe(b.repo, "--dirty") + ")"
		}
		logf("go %s", strings.Join(bd.args, " "))
		cmd := exec.CommandContext(ctx, "go", bd.args...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0") // as make build and the Dockerfile, both controllers alike
		if out, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("build %s: %w\n%s", bd.name, err, out)
		}
		*bd.bin = filepath.Join(b.binDir, bd.name)
	}
	return nil
}

// archive extracts a revision of the repository into the bin directory.
func (b *bench) archive(ctx context.Context, rev string) (string, error) {
	dir := filepath.Join(b.binDir, "src")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	archive := exec.CommandContext(ctx, "git", "archive", "--format=tar", rev)
	archive.Dir = b.repo
	extract := exec.CommandContext(ctx, "tar", "-x", "-C", dir)
	pipe, err := archive.StdoutPipe()
	if err != nil {
		return "", err
	}
	extract.Stdin = pipe
	if err := extract.Start(); err != nil {
		return "", err
	}
	var stderr strings.Builder
	archive.Stderr = &stderr
	if err := archive.Run(); err != nil {
		return "", fmt.Errorf("git archive %s: %w %s", rev, err, stderr.String())
	}
	if err := extract.Wait(); err != nil {
		return "", fmt.Errorf("extract git archive %s: %w", rev, err)
	}
	return dir, nil
}

// copyFile copies a file, making the directory of to.
func copyFile(from, to string) error {
	return writeFile(to, func() ([]byte, error) { return os.ReadFile(from) })
}

// writeFile writes what data returns to path, making its directory.
func writeFile(path string, data func() ([]byte, error)) error {
	raw, err := data()
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	return os.WriteFile(path, raw, 0o644)
}

// readJobs writes each job's policy (testdata/) with -resync as its resyncPeriodSeconds, and
// reads its sample (samples/).
func (b *bench) readJobs(jobs []*job) error {
	b.policies, b.samples = map[string]string{}, map[string]*unstructured.Unstructured{}
	for _, j := range jobs {
		policy, err := b.writePolicy(j)
		if err != nil {
			return err
		}
		if b.samples[j.name], err = sample(b.repo, j.file); err != nil {
			return err
		}
		b.policies[j.name] = policy
	}
	b.policy, b.sample = b.policies[myAppJob.name], b.samples[myAppJob.name]
	return nil
}

// writePolicy writes testdata/<j.file> with -resync as its resyncPeriodSeconds; it returns the
// file written.
func (b *bench) writePolicy(j *job) (string, error) {
	raw, err := os.ReadFile(filepath.Join(b.repo, "test", "bench", "testdata", j.file))
	if err != nil {
		return "", err
	}
	re := regexp.MustCompile(`(?m)^(\s*resyncPeriodSeconds:)\s*\d+`)
	if !re.Match(raw) {
		return "", fmt.Errorf("testdata/%s has no resyncPeriodSeconds", j.file)
	}
	raw = re.ReplaceAll(raw, fmt.Appendf(nil, "${1} %d", int(b.o.resync.Seconds())))
	policy := filepath.Join(b.binDir, j.file)
	return policy, os.WriteFile(policy, raw, 0o644)
}

// metacelDefaults reads the client settings `metacel run` defaults to from its help.
func metacelDefaults(bin string) string {
	out, _ := exec.Command(bin, "run", "--help").CombinedOutput()
	get := func(flag string) string {
		m := regexp.MustCompile(`(?m)^\s+--` + flag + ` \S+\s+.*\(default ([^)]+)\)$`).FindSubmatch(out)
		if m == nil {
			return "?"
		}
		return string(m[1])
	}
	return fmt.Sprintf("QPS %s, burst %s, %s workers", get("kube-api-qps"), get("kube-api-burst"), get("workers"))
}

func repoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "hack", "control-plane.sh")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("run from inside the metacel repository")
		}
		dir = parent
	}
}

func logf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "%s %s\n", time.Now().Format("15:04:05"), fmt.Sprintf(format, args...))
}
