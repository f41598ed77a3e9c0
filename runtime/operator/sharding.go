package operator

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/util/uuid"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/klog/v2"

	"metacel.dev/metacel/runtime/compact"
	"metacel.dev/metacel/runtime/controller"
	"metacel.dev/metacel/runtime/hashslot"
	"metacel.dev/metacel/runtime/shard"
)

// Sharding configures a replica that shares the parents with the other replicas (package
// shard), instead of leader election.
type Sharding struct {
	// Namespace holds the replicas' Leases and the slot table.
	Namespace string
	// Identity of this replica; empty: hostname and a random suffix.
	Identity                                    string
	LeaseDuration, RenewDeadline, RenewInterval time.Duration
}

// DefaultSharding has the timings of leader election: a replica's slots move at most 15 s after
// it stops renewing, and it stops syncing them 10 s after its last renewal.
func DefaultSharding(namespace string) Sharding {
	return Sharding{Namespace: namespace, LeaseDuration: 15 * time.Second, RenewDeadline: 10 * time.Second, RenewInterval: 2 * time.Second}
}

// shards is the slots this replica holds, which every controller of the policy set follows.
type shards struct {
	serverSide bool
	identity   string
	// reports gives what each live replica last reported (report), by identity; allows
	// whether this replica may write for a parent of a slot now
	reports func() map[string]string
	allows  func(slot int) bool
	mu      sync.Mutex
	slots   hashslot.Set
	// counts and rollouts are what this replica reports next (report)
	counts   map[string]controller.Counts
	rollouts map[string]rolloutReport
	metrics  *shardMetrics
}

func (s *shards) held() hashslot.Set {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.slots
}

// withIdentity returns sh with an identity: its own, else the hostname and a random suffix.
func (sh Sharding) withIdentity() Sharding {
	if sh.Identity == "" {
		host, _ := os.Hostname()
		sh.Identity = host + "_" + string(uuid.NewUUID())
	}
	return sh
}

// replicaAgent returns cfg whose user agent names the replica, so that an audit log tells which
// replica sent each request.
func replicaAgent(cfg *rest.Config, identity string) *rest.Config {
	cfg = rest.CopyConfig(cfg)
	cfg.UserAgent = strings.TrimSpace(cmp.Or(cfg.UserAgent, rest.DefaultKubernetesUserAgent()) + " shard/" + identity)
	return cfg
}

// startSharding probes whether the API server selects shards, and starts this replica's
// coordinator: the slots it gives go to every controller of set, and the fence in front of the
// set's clients opens with its renewals and checks each parent's slot with it. The coordinator
// writes with kube, outside the fence (its Lease is what opens it).
//
// It returns stop, which stops the coordinator and waits, up to leaveTimeout, until it has
// given the slots back and deleted its Lease, so that the others take them at once: the process
// exits as soon as the run returns. Called once the controllers have stopped, stop waits for no
// sync.
func startSharding(ctx context.Context, sh Sharding, kube kubernetes.Interface, fence *writeFence, set *policySet, reg prometheus.Registerer) (stop func(), err error) {
	serverSide, err := compact.ProbeShardSupport(ctx, kube, sh.Namespace)
	if err != nil {
		return nil, fmt.Errorf("ask the API server whether it selects shards: %w", err)
	}
	logger := klog.FromContext(ctx)
	logger.Info("Sharding the parents with the other replicas", "identity", sh.Identity, "serverSideShardSelectors", serverSide)
	set.shards = &shards{serverSide: serverSide, identity: sh.Identity, metrics: newShardMetrics(reg, sh.Identity)}
	coord := shard.New(kube, shard.Options{
		Namespace: sh.Namespace, Identity: sh.Identity,
		LeaseDuration: sh.LeaseDuration, RenewDeadline: sh.RenewDeadline, RenewInterval: sh.RenewInterval,
		Report: set.shards.report, Renewed: fence.renewedAt,
	}, set.setSlots)
	fence.setSlots(coord.Allows)
	set.shards.reports, set.shards.allows = coord.Reports, coord.Allows
	ctx, cancel := context.WithCancel(ctx)
	left := make(chan struct{})
	go func() {
		defer close(left)
		if err := coord.Run(ctx); err != nil && ctx.Err() == nil {
			logger.Error(err, "Shard coordinator stopped")
		}
	}()
	return func() {
		cancel()
		timeout := time.NewTimer(leaveTimeout)
		defer timeout.Stop()
		select {
		case <-left:
		case <-timeout.C:
			logger.Info("The shard coordinator has not left yet; this replica's slots move once its Lease expires", "waited", leaveTimeout)
		}
	}, nil
}

// leaveTimeout bounds how long a replica that stops waits for its coordinator to give its slots
// back: each of its requests is bounded by 10 s, and the others take the slots once its Lease
// expires anyway.
const leaveTimeout = 30 * time.Second

// setSlots makes every controller sync the parents of slots, and returns once none syncs those
// of the slots given up (the coordinator then writes them free).
func (s *policySet) setSlots(ctx context.Context, slots hashslot.Set) {
	s.shards.mu.Lock()
	s.shards.slots = slots
	s.shards.mu.Unlock()
	s.shards.metrics.set(slots)
	s.ctrls.mu.Lock()
	var ctrls []*controller.Controller
	for _, r := range s.ctrls.running {
		ctrls = append(ctrls, r.syncing()...)
		if r.rollout != nil {
			ctrls = append(ctrls, r.rollout.target.syncing()...)
		}
	}
	for _, r := range s.ctrls.removing {
		ctrls = append(ctrls, r.syncing()...)
	}
	s.ctrls.mu.Unlock()
	var wg sync.WaitGroup
	for _, c := range ctrls {
		wg.Go(func() { c.FollowSlots(ctx, s.shards.held) })
	}
	wg.Wait()
}

// syncing returns the controllers that may sync r's parents now: r's, and those of the versions
// it replaces that go on syncing until it has synced its caches (its predecessors). The caller
// holds the policy set's lock, under which a predecessor is given; a predecessor taken meanwhile
// is stopped, and follows no more slots.
func (r *running) syncing() []*controller.Controller {
	var out []*controller.Controller
	for p := r; p != nil; {
		out = append(out, p.ctrl)
		p.mu.Lock()
		next := p.predecessor
		p.mu.Unlock()
		p = next
	}
	return out
}

// report is what this replica tells the others at each renewal: the counts of the parents it
// holds, by policy, and where its rollouts stand (shardrollout.go). The replica that holds slot 0
// writes the policies' status with the sum, and drives the rollouts. It reads what the policy
// set's goroutine and the rollout drivers last left (setCounts, setRollout), without the policy
// set's lock: a renewal waits for nothing.
func (s *shards) report() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	b, _ := json.Marshal(shardReportBody{Counts: s.counts, Rollouts: s.rollouts})
	return string(b)
}

// shardReportBody is a replica's report.
type shardReportBody struct {
	Counts   map[string]controller.Counts `json:"counts,omitempty"`
	Rollouts map[string]rolloutReport     `json:"rollouts,omitempty"`
}

// setCounts keeps the counts the next report gives.
func (s *shards) setCounts(counts map[string]controller.Counts) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.counts = counts
}

// othersReports returns what the other live replicas last reported, by identity.
func (s *shards) othersReports() map[string]shardReportBody {
	out := map[string]shardReportBody{}
	for identity, report := range s.reports() {
		var body shardReportBody
		if identity == s.identity || json.Unmarshal([]byte(report), &body) != nil {
			continue
		}
		out[identity] = body
	}
	return out
}

// othersCounts sums, by policy, what the other live replicas last reported.
func (s *shards) othersCounts() map[string]controller.Counts {
	out := map[string]controller.Counts{}
	for _, body := range s.othersReports() {
		for name, c := range body.Counts {
			out[name] = add(out[name], c)
		}
	}
	return out
}

// writesStatus reports whether this replica writes the policies' status: without sharding, yes;
// with, the replica holding slot 0 does, while it may write for it.
func (s *shards) writesStatus() bool {
	return s == nil || (s.held().Has(0) && s.allows(0))
}

// shardMetrics are the metacel_shard_* metrics of this replica.
type shardMetrics struct {
	identity string
	slots    prometheus.Gauge
	ranges   *prometheus.GaugeVec
}

func newShardMetrics(reg prometheus.Registerer, identity string) *shardMetrics {
	m := &shardMetrics{
		identity: identity,
		slots: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "metacel_shard_slots", Help: "Slots of the parents' UID hash (of 64) this replica syncs.",
			ConstLabels: prometheus.Labels{"identity": identity},
		}),
		ranges: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "metacel_shard_range", Help: "1 per range of slots this replica syncs (from-to, inclusive, of 64 slots of the parents' UID hash).",
		}, []string{"identity", "range"}),
	}
	reg.MustRegister(m.slots, m.ranges)
	return m
}

func (m *shardMetrics) set(s hashslot.Set) {
	m.slots.Set(float64(s.Count()))
	m.ranges.Reset()
	for _, r := range s.Ranges() {
		m.ranges.WithLabelValues(m.identity, hashslot.SetOf(r).String()).Set(1)
	}
}
