package main

import (
	"cmp"
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/funcr"
	"github.com/spf13/cobra"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/klog/v2"

	"metacel.dev/metacel/runtime/compact"
	"metacel.dev/metacel/runtime/operator"
)

type runOptions struct {
	cluster         *clusterFlags
	policyDirs      []string
	policyNamespace string
	// runtimeNamespace is the namespace metacel runs in: its records live there when no other
	// namespace is given
	runtimeNamespace string
	workers          int
	qps              float32
	burst            int
	metricsAddr      string
	healthAddr       string
	profiling        bool
	leaderElect      bool
	election         operator.LeaderElection
	shards           string
	sharding         operator.Sharding
	logFormat        string
	verbosity        flag.Value
	// allowRuntimeIdentity lets policies without a ServiceAccount act as the runtime
	allowRuntimeIdentity bool
	maxCachedObjectBytes int
	bookkeepingPerSecond float64
	webhook              webhookFlags
}

func newRunCommand() *cobra.Command {
	o := &runOptions{}
	cmd := &cobra.Command{
		Use:   "run [--kubeconfig F] [--policy-dir D]... [flags]",
		Short: "Reconcile the policies' parents in a cluster",
		Long: `Run loads the policies and runs one controller per policy: it watches parents, children and
related objects, applies the desired children with server-side apply, deletes the ones no longer
desired, and writes the parents' status and conditions.

The Go runtime's soft memory limit is 90 % of $METACEL_MEMORY_LIMIT (bytes; the shipped
Deployments set it to the container's memory limit) unless $GOMEMLIMIT is set.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return o.run(cmd.Context())
		},
	}
	f := cmd.Flags()
	o.cluster = addClusterFlags(cmd, "kubeconfig file (default: $KUBECONFIG, ~/.kube/config, or in-cluster)", withoutNamespace)
	f.StringArrayVar(&o.policyDirs, "policy-dir", nil, "policy file or directory, e.g. a mounted ConfigMap (repeatable)")
	f.StringVar(&o.policyNamespace, "policy-namespace", defaultNamespace(), `namespace whose ConfigMaps labelled metacel.dev/policy=true hold policies ("" for none)`)
	f.StringVar(&o.runtimeNamespace, "runtime-namespace", ownNamespace(os.Getenv), "namespace metacel runs in, which keeps its records (the ledger of each policy's child resources, rollout records, memos) when --policy-namespace is \"\" and there is no --leader-election-namespace (default: $POD_NAMESPACE, else the service account's namespace)")
	f.IntVar(&o.workers, "workers", 8, "concurrent syncs per policy")
	f.Float32Var(&o.qps, "kube-api-qps", -1, "client-side limit of queries per second to the API server; -1: none, the API server's priority and fairness decides")
	f.IntVar(&o.burst, "kube-api-burst", 100, "burst of queries to the API server, with a --kube-api-qps limit")
	f.StringVar(&o.metricsAddr, "metrics-bind-address", ":8080", `address of /metrics ("0" to disable)`)
	f.StringVar(&o.healthAddr, "health-probe-bind-address", ":8081", `address of /healthz and /readyz ("0" to disable)`)
	f.BoolVar(&o.allowRuntimeIdentity, "allow-policies-without-service-account", false, "let a policy that names no spec.serviceAccountName act as the runtime itself: whoever may write a policy then has the runtime's permissions, which is cluster-admin-equivalent (without it, such a policy does not load)")
	f.Float64Var(&o.bookkeepingPerSecond, "bookkeeping-patches-per-second", operator.DefaultBookkeepingPatchesPerSecond, "most patches a second of children's bookkeeping alone (metacel's own labels and annotations, which an upgrade of metacel may change on every child), all policies together, and in a burst")
	f.IntVar(&o.maxCachedObjectBytes, "max-cached-object-bytes", compact.DefaultMaxKeptBytes, "size above which the caches keep an object's metadata only, and a sync reads the object from the API server: bounds what objects anyone may create cost the runtime's memory")
	f.BoolVar(&o.profiling, "profiling", false, "serve Go's pprof profiles at /debug/pprof/ on the metrics address (e.g. go tool pprof http://ADDR/debug/pprof/profile?seconds=30)")
	f.BoolVar(&o.leaderElect, "leader-elect", false, "reconcile only while holding a Lease, so that replicas can stand by")
	def := operator.DefaultLeaderElection("")
	f.StringVar(&o.election.ID, "leader-election-id", def.ID, "name of the leader election Lease")
	f.StringVar(&o.election.Namespace, "leader-election-namespace", "", "namespace of the Lease (default: --policy-namespace, else --runtime-namespace)")
	f.DurationVar(&o.election.LeaseDuration, "leader-election-lease-duration", def.LeaseDuration, "how long a standby waits before taking over a Lease that is not renewed")
	f.DurationVar(&o.election.RenewDeadline, "leader-election-renew-deadline", def.RenewDeadline, "how long the leader tries to renew before it gives up leading")
	f.DurationVar(&o.election.RetryPeriod, "leader-election-retry-period", def.RetryPeriod, "how often replicas try to acquire or renew the Lease")
	sh := operator.DefaultSharding("")
	f.StringVar(&o.shards, "shards", "off", "off: one replica reconciles (with --leader-elect, the others stand by); auto: the replicas share the parents, each syncing about 1/N of them (exclusive with --leader-elect)")
	f.StringVar(&o.sharding.Identity, "shard-identity", "", "this replica's name among the sharded replicas (default: hostname and a random suffix)")
	f.DurationVar(&o.sharding.LeaseDuration, "shard-lease-duration", sh.LeaseDuration, "how long after a replica stops renewing its Lease the others take its parents")
	f.DurationVar(&o.sharding.RenewDeadline, "shard-renew-deadline", sh.RenewDeadline, "how long a replica goes on syncing without renewing its Lease (at most 90% of --shard-lease-duration)")
	f.DurationVar(&o.sharding.RenewInterval, "shard-renew-interval", sh.RenewInterval, "how often a replica renews its Lease (less than --shard-renew-deadline)")
	o.webhook.add(f)
	f.StringVar(&o.logFormat, "log-format", "text", "log format: text (klog) or json (one object per line)")
	klogFlags := flag.NewFlagSet("klog", flag.ContinueOnError)
	klog.InitFlags(klogFlags)
	f.AddGoFlag(klogFlags.Lookup("v"))
	o.verbosity = klogFlags.Lookup("v").Value
	return cmd
}

// checkShardTimings refuses the shard Lease timings a replica cannot work with: the Lease
// advertises its duration in whole seconds, and the others count with that; a replica writes
// for at most 90 % of it after a renewal (the write fence), so a renew deadline beyond that
// would have it sync slots it may not write, and a duration under a second would refuse every
// write; it renews every interval, more often than its deadline.
func checkShardTimings(sh operator.Sharding) error {
	advertised := sh.LeaseDuration.Truncate(time.Second)
	switch {
	case advertised < time.Second:
		return fmt.Errorf("--shard-lease-duration (%s) must be at least 1s: a Lease says its duration in whole seconds", sh.LeaseDuration)
	case sh.RenewDeadline > advertised-advertised/10:
		return fmt.Errorf("--shard-renew-deadline (%s) must be at most 90%% of --shard-lease-duration in whole seconds (%s)", sh.RenewDeadline, advertised-advertised/10)
	case sh.RenewInterval <= 0:
		return fmt.Errorf("--shard-renew-interval (%s) must be more than 0", sh.RenewInterval)
	case sh.RenewInterval >= sh.RenewDeadline:
		return fmt.Errorf("--shard-renew-interval (%s) must be less than --shard-renew-deadline (%s)", sh.RenewInterval, sh.RenewDeadline)
	}
	return nil
}

// checkElectionTimings refuses the leader election timings a leader cannot work with: the Lease
// advertises its duration in whole seconds, which the standbys count with and the leader's write
// fence keeps within, so a duration under a second would refuse every write of the leader while a
// standby took the Lease over at once; and client-go's elector's own rules (a renew deadline
// under the duration and over 1.2 retry periods), which it says only once connected.
func checkElectionTimings(le operator.LeaderElection) error {
	switch {
	case le.LeaseDuration.Truncate(time.Second) < time.Second:
		return fmt.Errorf("--leader-election-lease-duration (%s) must be at least 1s: a Lease says its duration in whole seconds", le.LeaseDuration)
	case le.RenewDeadline >= le.LeaseDuration:
		return fmt.Errorf("--leader-election-renew-deadline (%s) must be less than --leader-election-lease-duration (%s)", le.RenewDeadline, le.LeaseDuration)
	case le.RetryPeriod <= 0:
		return fmt.Errorf("--leader-election-retry-period (%s) must be more than 0", le.RetryPeriod)
	case float64(le.RenewDeadline) <= leaderelection.JitterFactor*float64(le.RetryPeriod):
		return fmt.Errorf("--leader-election-renew-deadline (%s) must be more than %v × --leader-election-retry-period (%s)", le.RenewDeadline, leaderelection.JitterFactor, le.RetryPeriod)
	}
	return nil
}

func (o *runOptions) run(ctx context.Context) error {
	switch {
	case len(o.policyDirs) == 0 && o.policyNamespace == "":
		return errors.New("no policy source: give --policy-dir or --policy-namespace")
	case o.leaderElect && o.election.Namespace == "" && o.policyNamespace == "" && o.runtimeNamespace == "":
		return errors.New("--leader-elect needs --leader-election-namespace (or --policy-namespace, or --runtime-namespace)")
	case o.policyNamespace == "" && o.election.Namespace == "" && o.runtimeNamespace == "":
		return errNoRuntimeNamespace
	case o.logFormat != "text" && o.logFormat != "json":
		return fmt.Errorf("--log-format must be text or json, got %q", o.logFormat)
	case o.workers < 1:
		return fmt.Errorf("--workers must be at least 1, got %d", o.workers)
	case o.bookkeepingPerSecond <= 0:
		return fmt.Errorf("--bookkeeping-patches-per-second must be more than 0, got %v", o.bookkeepingPerSecond)
	case o.shards != "off" && o.shards != "auto":
		return fmt.Errorf("--shards must be off or auto, got %q", o.shards)
	case o.shards == "auto" && o.leaderElect:
		return errors.New("--shards=auto and --leader-elect exclude each other: sharded replicas all reconcile, each its share")
	case o.shards == "auto" && o.policyNamespace == "":
		return errors.New("--shards=auto needs --policy-namespace: the replicas' Leases and slot table live there")
	}
	if o.shards == "auto" {
		if err := checkShardTimings(o.sharding); err != nil {
			return err
		}
	}
	if o.leaderElect {
		if err := checkElectionTimings(o.election); err != nil {
			return err
		}
	}
	cfg, err := o.cluster.restConfig("metacel/" + version)
	if err != nil {
		return err
	}
	cfg.QPS, cfg.Burst = o.qps, o.burst
	ctx, stop := signal.NotifyContext(ctx, syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	ctx = klog.NewContext(ctx, o.logger())
	if err := setGoMemoryLimit(ctx, os.Getenv); err != nil {
		return err
	}
	opts := operator.Options{
		Config:          cfg,
		PolicyDirs:      o.policyDirs,
		PolicyNamespace: o.policyNamespace,
		Namespace:       o.runtimeNamespace,
		Workers:         o.workers,
		MetricsAddr:     o.metricsAddr,
		HealthAddr:      o.healthAddr,
		Profiling:       o.profiling,

		AllowPoliciesWithoutServiceAccount: o.allowRuntimeIdentity,
		MaxCachedObjectBytes:               o.maxCachedObjectBytes,
		BookkeepingPatchesPerSecond:        o.bookkeepingPerSecond,
	}
	if opts.Webhook, err = o.webhook.options(o.runtimeNamespace); err != nil {
		return err
	}
	if o.leaderElect {
		if o.election.Namespace == "" {
			o.election.Namespace = cmp.Or(o.policyNamespace, o.runtimeNamespace)
		}
		opts.LeaderElection = &o.election
	}
	if o.shards == "auto" {
		o.sharding.Namespace = o.policyNamespace
		opts.Sharding = &o.sharding
	}
	return operator.Run(ctx, opts)
}

// errNoRuntimeNamespace refuses a run that would have nowhere to keep its records: a child
// resource dropped from a policy while it is down would keep its children for ever.
var errNoRuntimeNamespace = errors.New(`with --policy-namespace "" metacel needs a namespace to keep its records in ` +
	"(the ledger of the child resources each policy has had: without it, the children of a child resource dropped " +
	"from a policy while metacel is down stay for ever): give --runtime-namespace, or set POD_NAMESPACE " +
	"(in a Pod, from the downward API: valueFrom.fieldRef.fieldPath: metadata.namespace)")

// defaultNamespace is the namespace metacel runs in (ownNamespace), or metacel-system.
func defaultNamespace() string {
	return cmp.Or(ownNamespace(os.Getenv), "metacel-system")
}

// serviceAccountNamespace is where a Pod finds the namespace of its service account.
var serviceAccountNamespace = "/var/run/secrets/kubernetes.io/serviceaccount/namespace"

// ownNamespace is the namespace metacel runs in, from the downward API ($POD_NAMESPACE) or its
// service account; "" outside a Pod without POD_NAMESPACE.
func ownNamespace(getenv func(string) string) string {
	if ns := getenv("POD_NAMESPACE"); ns != "" {
		return ns
	}
	if b, err := os.ReadFile(serviceAccountNamespace); err == nil {
		return strings.TrimSpace(string(b))
	}
	return ""
}

// logger returns the logger of --log-format; json also becomes klog's, for client-go's logs.
func (o *runOptions) logger() logr.Logger {
	if o.logFormat != "json" {
		return klog.Background()
	}
	v, _ := strconv.Atoi(o.verbosity.String())
	logger := funcr.NewJSON(func(obj string) { fmt.Fprintln(os.Stderr, obj) }, funcr.Options{LogTimestamp: true, Verbosity: v})
	klog.SetLogger(logger)
	return logger
}
