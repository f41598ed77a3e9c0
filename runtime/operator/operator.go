package operator

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math"
	"net"
	"net/http"
	"net/http/pprof"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/events"
	"k8s.io/client-go/util/flowcontrol"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"metacel.dev/metacel/runtime/apply"
	"metacel.dev/metacel/runtime/compact"
	"metacel.dev/metacel/runtime/controller"
	"metacel.dev/metacel/runtime/identity"
	"metacel.dev/metacel/runtime/informers"
	"metacel.dev/metacel/runtime/kinds"
	"metacel.dev/metacel/runtime/ledger"
	"metacel.dev/metacel/runtime/memo"
	"metacel.dev/metacel/runtime/policystatus"
	"metacel.dev/metacel/runtime/rollout"
	"metacel.dev/metacel/runtime/source"
)

// Options configure a run.
type Options struct {
	// Config reaches the API server; its QPS and Burst are used as given.
	Config *rest.Config
	// PolicyDirs are policy files or directories, watched for changes.
	PolicyDirs []string
	// PolicyNamespace is the namespace whose ConfigMaps labelled metacel.dev/policy=true hold
	// policies; "" reads no ConfigMap.
	PolicyNamespace string
	// Namespace is the runtime's own namespace (a Pod's, from the downward API). Its records (the
	// policies' ledger, rollout records and memos) live in the policy namespace, else in the
	// leader election Lease's, else here; Run refuses to start with none of the three.
	Namespace string
	// Workers per policy.
	Workers int
	// MetricsAddr and HealthAddr are listen addresses; "" or "0" serves nothing.
	MetricsAddr, HealthAddr string
	// Profiling serves Go's pprof profiles at /debug/pprof/ on MetricsAddr, as Kubernetes
	// components do with --profiling.
	Profiling bool
	// Registry receives the metrics; nil makes a new one.
	Registry *prometheus.Registry
	// Ready, when set, is closed once the first policies are loaded and their caches synced.
	Ready chan<- struct{}
	// OnReload, when set, is called after each reconciliation of the policy set with the running
	// policies and their generations (for tests).
	OnReload func(running map[string]int)
	// LeaderElection, when set, makes this replica reconcile only while it holds a Lease.
	LeaderElection *LeaderElection
	// OnSync, when set, is told of every sync of a parent, with when it began and ended (tests).
	OnSync func(policy, key string, start, end time.Time)
	// Sharding, when set, makes this replica share the parents with the other replicas that run
	// with it (package shard); exclusive with LeaderElection.
	Sharding *Sharding
	// AllowPoliciesWithoutServiceAccount lets a policy that names no ServiceAccount act as the
	// runtime itself: whoever may write a policy then has the runtime's permissions (every
	// resource of every policy, in every namespace), which is cluster-admin-equivalent. Without
	// it, such a policy does not load.
	AllowPoliciesWithoutServiceAccount bool
	// BookkeepingPatchesPerSecond bounds the patches of children's bookkeeping alone (metacel's
	// own labels and annotations, as a runtime upgrade changes them) that all policies send
	// together, a second and in a burst; 0: DefaultBookkeepingPatchesPerSecond.
	BookkeepingPatchesPerSecond float64
	// MaxCachedObjectBytes is the size above which the caches keep an object without its body,
	// read from the API server when a sync reads it; 0: compact.DefaultMaxKeptBytes.
	MaxCachedObjectBytes int
	// Webhook, when set, serves the conversion webhook of the CRDs of several versions the
	// runtime installs, on every replica (standbys included); without it such a CRD is not
	// installed.
	Webhook *Webhook
}

// DefaultBookkeepingPatchesPerSecond is how many bookkeeping patches a second the runtime sends
// at most by default: an upgrade over 100,000 children brings them up to date in about 17
// minutes, without a burst that would crowd the API server.
const DefaultBookkeepingPatchesPerSecond = 100

// bookkeepingPace is the pace of the bookkeeping patches: as many a second as in a burst.
func bookkeepingPace(o Options) *controller.BookkeepingPace {
	perSecond := cmp.Or(o.BookkeepingPatchesPerSecond, DefaultBookkeepingPatchesPerSecond)
	return controller.NewBookkeepingPace(perSecond, int(math.Ceil(perSecond)))
}

// Run runs until ctx is done or a source or server fails (or, with leader election, this replica
// loses its Lease).
func Run(ctx context.Context, o Options) error {
	logger := klog.FromContext(ctx)
	if recordsNamespace(o) == "" {
		return errNoNamespace
	}
	// With leader election or sharding, the clients write through a fence that refuses writes
	// once this replica's Lease may have expired by its own clock (and, sharded, the writes for
	// the parents of slots it no longer holds); the Lease's own client does not.
	cfg, fence := o.Config, (*writeFence)(nil)
	switch {
	case o.LeaderElection != nil:
		fence = newWriteFence(logger, *o.LeaderElection, clock.RealClock{})
		cfg = fence.config(o.Config)
	case o.Sharding != nil:
		sh := o.Sharding.withIdentity()
		o.Sharding = &sh
		o.Config = replicaAgent(o.Config, sh.Identity)
		fence = newShardFence(logger, sh, clock.RealClock{})
		cfg = fence.config(o.Config)
	}
	clients, err := newClients(cfg, maxKept(o))
	if err != nil {
		return err
	}
	reg := o.Registry
	if reg == nil {
		reg = prometheus.NewRegistry()
		reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	}
	registerProcessMetrics()
	eventsClient, err := kubernetes.NewForConfig(eventsConfig(cfg))
	if err != nil {
		return fmt.Errorf("events client: %w", err)
	}
	broadcaster := events.NewBroadcaster(&events.EventSinkImpl{Interface: eventsClient.EventsV1()})
	if err := broadcaster.StartRecordingToSinkWithContext(ctx); err != nil {
		return fmt.Errorf("start events: %w", err)
	}
	defer broadcaster.Shutdown()
	queue := newEventQueue(broadcaster.NewRecorder(scheme.Scheme, "metacel"), eventsQueued, reg)
	go queue.run(ctx, flowcontrol.NewTokenBucketRateLimiter(eventsQPS, eventsBurst))
	var recorder events.EventRecorder = queue

	var ready atomic.Bool
	errs := make(chan error, 5)
	serve(ctx, o.MetricsAddr, metricsMux(reg, o.Profiling), errs)
	serve(ctx, o.HealthAddr, healthMux(&ready), errs)
	webhook, err := startConversionWebhook(ctx, o, clients, reg, errs)
	if err != nil {
		return err
	}
	logger.Info("Started", "policyDirs", o.PolicyDirs, "policyNamespace", o.PolicyNamespace, "workers", o.Workers)
	markReady := sync.OnceFunc(func() {
		ready.Store(true)
		if o.Ready != nil {
			close(o.Ready)
		}
	})
	r := &reconciler{o: o, clients: clients, fence: fence, reg: reg, recorder: recorder, markReady: markReady, errs: errs, webhook: webhook}
	if o.Sharding != nil {
		if r.shardClient, err = kubernetes.NewForConfig(o.Config); err != nil {
			return fmt.Errorf("shard client: %w", err)
		}
	}
	if o.LeaderElection == nil {
		return r.run(ctx)
	}
	markReady() // a standby is ready: ready to take over
	return runElected(ctx, o.Config, fence, *o.LeaderElection, r.run)
}

// eventsConfig is cfg for the events' own client: its rate is the eventQueue's.
func eventsConfig(cfg *rest.Config) *rest.Config {
	out := rest.CopyConfig(cfg)
	out.QPS, out.Burst, out.RateLimiter = -1, 0, nil
	return out
}

// reconciler is the part of the process that reconciles: the leader's, with leader election.
type reconciler struct {
	o       Options
	clients *clients
	// fence is in front of clients, with leader election or sharding
	fence    *writeFence
	reg      prometheus.Registerer
	recorder events.EventRecorder
	// markReady reports the process ready (once the first policies' caches have synced)
	markReady func()
	errs      chan error
	// webhook converts the parents of the CRDs of several versions the runtime installs
	webhook *conversionServer
	// shardClient, with sharding, writes the replica's Lease and the slot table, outside the fence
	shardClient kubernetes.Interface
}

func (r *reconciler) run(ctx context.Context) error {
	o := r.o
	mapper := kinds.NewDiscovery(r.clients.discovery, r.clients.dynamic)
	pool := informers.NewPool(ctx, r.clients.dynamic, r.clients.compact)
	pool.KeepAtMost(maxKept(o))
	r.reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "metacel_informers",
		Help: "Informers running: one per watched resource and label selector, shared by policies.",
	}, func() float64 { return float64(pool.Len()) }))
	writer := apply.NewWriter(r.clients.dynamic).WithRawClient(r.clients.raw, compact.Responses{})
	// the questions about identities change nothing: they need no fence
	unfenced, err := kubernetes.NewForConfig(o.Config)
	if err != nil {
		return fmt.Errorf("client: %w", err)
	}
	ids := &identities{
		namespace: recordsNamespace(o), base: r.clients.config, runtime: writer, allowRuntime: o.AllowPoliciesWithoutServiceAccount,
		self:     sync.OnceValue(func() string { return whoAmI(ctx, o.Config, unfenced) }),
		reviewer: identity.NewReviewer(unfenced.AuthorizationV1().SubjectAccessReviews(), clock.RealClock{}),
		writers:  map[identity.ServiceAccount]*apply.Writer{},
	}
	deps := controller.Deps{
		Pool:   pool,
		Ledger: ledger.New(r.clients.kube, recordsNamespace(o)),
		Writer: writer,
		ActAs:  ids.forPolicy,
		// the policy namespace holds the runtime's records; children never land there
		ReservedNamespace: recordsNamespace(o),
		Mapper:            mapper,
		Recorder:          r.recorder,
		Metrics:           controller.NewMetrics(r.reg),
		Clock:             clock.RealClock{},
		OnSync:            o.OnSync,
		Pace:              bookkeepingPace(o),
	}
	set := newPolicySet(ctx, deps, mapper.Reset, o.Workers, r.recorder, r.reg)
	set.identities = ids
	set.installer = &crdInstaller{client: r.clients.dynamic, runtime: writer, writer: ids.writerNamed, runs: set.ctrls.runs, conversion: r.webhook, discovery: r.clients.discovery}
	set.rollouts.records = rollout.NewStore(r.clients.kube, recordsNamespace(o))
	set.ctrls.memos = memo.NewStore(r.clients.kube, recordsNamespace(o))
	if o.Sharding != nil {
		stopSharding, err := startSharding(ctx, *o.Sharding, r.shardClient, r.fence, set, r.reg)
		if err != nil {
			return err
		}
		// deferred before the controllers' stop, so run after it: the coordinator gives the
		// slots back once no controller syncs them, before the process exits
		defer stopSharding()
	}
	set.status = policystatus.NewReporter(r.clients.kube, o.PolicyNamespace)
	go set.status.Run(ctx)
	statusTick := time.NewTicker(statusInterval)
	defer statusTick.Stop()
	defer set.ctrls.stopAll()
	snapshots, sources := startSources(ctx, o, r.clients, r.errs)
	crds, stopCRDs := watchCRDs(pool, mapper)
	defer stopCRDs()

	seen, readying := map[string]bool{}, false
	for {
		select {
		case <-ctx.Done():
			return nil
		case err := <-r.errs:
			return err
		case snap := <-snapshots:
			set.update(snap, sources)
			seen[snap.Source] = true
		case <-crds.signal:
			set.crdsChanged(crds.take())
		case <-r.webhook.caChanged():
			set.reinstallParentCRDs()
		case <-statusTick.C:
			set.publishStatus()
			if !set.retryInstalls() {
				continue
			}
		}
		if o.OnReload != nil {
			o.OnReload(set.ctrls.Running())
		}
		if len(seen) == sources && !readying {
			readying = true
			go whenSynced(ctx, set, r.markReady)
		}
	}
}

// maxKept is the size above which the caches keep an object without its body.
func maxKept(o Options) int { return cmp.Or(o.MaxCachedObjectBytes, compact.DefaultMaxKeptBytes) }

// statusInterval is how often the policies' status is gathered for their ConfigMaps.
const statusInterval = time.Second

// recordsNamespace is where the runtime keeps what must outlive it (the policies' ledger entries,
// rollout records, memos): the policy namespace, else the leader election Lease's, else the
// runtime's own. The first two come first so that an upgrade finds the records where earlier
// versions kept them.
func recordsNamespace(o Options) string {
	switch {
	case o.PolicyNamespace != "":
		return o.PolicyNamespace
	case o.LeaderElection != nil && o.LeaderElection.Namespace != "":
		return o.LeaderElection.Namespace
	}
	return o.Namespace
}

// errNoNamespace is Run's error when the runtime has no namespace to keep its records in: without
// the ledger, a child resource dropped from a policy while the runtime is down would keep its
// children for ever.
var errNoNamespace = errors.New("no namespace to keep the runtime's records in (the ledger of the child resources each policy has had, " +
	"without which the children of a child resource dropped from a policy while the runtime is down stay for ever): " +
	"give the runtime's own namespace (metacel run: --runtime-namespace, or the POD_NAMESPACE environment variable " +
	"set from the downward API's metadata.namespace), or a policy namespace")

// whenSynced calls done once every running controller has synced its caches.
func whenSynced(ctx context.Context, set *policySet, done func()) {
	for !set.ctrls.ready() {
		select {
		case <-ctx.Done():
			return
		case <-time.After(50 * time.Millisecond):
		}
	}
	done()
}

// startSources starts the policy sources; it returns their snapshots and how many there are.
func startSources(ctx context.Context, o Options, c *clients, errs chan<- error) (<-chan source.Snapshot, int) {
	out := make(chan source.Snapshot)
	n := 0
	if len(o.PolicyDirs) > 0 {
		n++
		go func() {
			if err := source.WatchPaths(ctx, o.PolicyDirs, out); err != nil {
				errs <- fmt.Errorf("watch policy paths: %w", err)
			}
		}()
	}
	if o.PolicyNamespace != "" {
		n++
		go func() {
			if err := source.WatchConfigMaps(ctx, c.kube, o.PolicyNamespace, out); err != nil {
				errs <- fmt.Errorf("watch policy ConfigMaps in %q: %w", o.PolicyNamespace, err)
			}
		}()
	}
	return out, n
}

type clients struct {
	// config is what the clients were made from, their rate limiter included
	config    *rest.Config
	dynamic   dynamic.Interface
	discovery discovery.DiscoveryInterface
	kube      kubernetes.Interface
	// compact lists and watches for the informers
	compact *compact.Client
	// raw sends the creates and applies, whose responses package compact decodes
	raw rest.Interface
}

// newClients returns the clients of cfg; they share one client-side rate limit (cfg's QPS and
// burst), as one client would.
func newClients(cfg *rest.Config, maxKept int) (*clients, error) {
	if cfg.RateLimiter == nil && cfg.QPS > 0 {
		cfg = rest.CopyConfig(cfg)
		cfg.RateLimiter = flowcontrol.NewTokenBucketRateLimiter(cfg.QPS, cfg.Burst)
	}
	kube, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("client: %w", err)
	}
	server, err := kube.Discovery().ServerVersion()
	if err != nil {
		server = nil // every kind listed as JSON
	}
	lister, err := compact.NewClient(cfg, server, maxKept)
	if err != nil {
		return nil, err
	}
	raw, err := apply.NewRawClient(cfg)
	if err != nil {
		return nil, err
	}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("dynamic client: %w", err)
	}
	return &clients{config: cfg, dynamic: dyn, discovery: kube.Discovery(), kube: kube, compact: lister, raw: raw}, nil
}

// metricsMux serves /metrics and, with profiling, net/http/pprof's /debug/pprof/ (the named
// profiles under it: heap, goroutine, ...; profile and trace take ?seconds=N).
func metricsMux(reg *prometheus.Registry, profiling bool) *http.ServeMux {
	mux := http.NewServeMux()
	gatherers := prometheus.Gatherers{reg, processRegistry}
	mux.Handle("/metrics", promhttp.HandlerFor(gatherers, promhttp.HandlerOpts{}))
	if profiling {
		mux.HandleFunc("/debug/pprof/", pprof.Index)
		mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
		mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
		mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
		mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	}
	return mux
}

func healthMux(ready *atomic.Bool) *http.ServeMux {
	mux := http.NewServeMux()
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("ok")) })
	mux.HandleFunc("/readyz", func(w http.ResponseWriter, _ *http.Request) {
		if !ready.Load() {
			http.Error(w, "caches not synced", http.StatusServiceUnavailable)
			return
		}
		_, _ = w.Write([]byte("ok"))
	})
	return mux
}

// serve serves h on addr until ctx is done; "" or "0" serves nothing.
func serve(ctx context.Context, addr string, h http.Handler, errs chan<- error) {
	if addr == "" || addr == "0" {
		return
	}
	srv := &http.Server{Addr: addr, Handler: h, ReadHeaderTimeout: 10 * time.Second}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		errs <- fmt.Errorf("listen on %s: %w", addr, err)
		return
	}
	go func() {
		<-ctx.Done()
		shutdownCtx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(shutdownCtx)
	}()
	go func() {
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			errs <- err
		}
	}()
}
