//go:build e2e

package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"metacel.dev/metacel/runtime/hashslot"
	"metacel.dev/metacel/runtime/shard"
)

// The sharded configuration (-configs sharded): metacel with --shards=auto as 1 replica and as
// each count of -replicas, the replicas separate processes (--shard-identity replica-01, ...) on
// one fresh API server with the ShardedListAndWatch feature gate, so that each lists and watches
// only its slots' parents. Per run: start the replicas, wait until they hold the 64 slots as
// they split them (shard.Assign) and are quiet, create the parents in a burst, wait until they
// converge and the replicas are quiet, and read each replica's RSS, CPU and
// metacel_policy_parents. No hand-written controller, no idle window, restart or policy change.
const (
	shardedConfig = "sharded"
	shardGates    = "ShardedListAndWatch=true"
)

// replicaStat is one replica's share of a sharded run.
type replicaStat struct {
	identity        string
	slots, parents  float64 // metacel_shard_slots and metacel_policy_parents{policy="myapp"} after converging
	rss, rssNow     float64 // MB at the end of the converge window: peak (VmHWM) and current
	cpu             float64 // CPU seconds in the converge window
	serverSelection string  // the replica's log: does the API server select shards (true, false, ?)
}

// shardedResult is one run of n sharded replicas: the run's figures in result (created,
// converge, settled, converged), each replica's in each.
type shardedResult struct {
	result
	replicas int
	each     []replicaStat
}

// parseReplicas reads -replicas: counts of replicas, 1 to 64 each.
func parseReplicas(list string) ([]int, error) {
	var out []int
	for f := range strings.SplitSeq(list, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 1 || n > hashslot.Count {
			return nil, fmt.Errorf("-replicas: %q is not a count of replicas from 1 to %d", f, hashslot.Count)
		}
		out = append(out, n)
	}
	return out, nil
}

// shardWork are the requests whose counts must stand still for a sharded run to be quiet: work
// but Leases, which every replica renews every --shard-renew-interval.
func shardWork(k reqKey) bool { return work(k) && k.Resource != "leases" }

// runShardedRuns runs every count of -replicas once (repetition rep), adding to results.
func (b *bench) runShardedRuns(ctx context.Context, rep int, results map[int][]*shardedResult) ([]string, error) {
	var details []string
	for _, n := range b.o.replicas {
		logf("run %d/%d, %s, %d replica(s) (--shards=auto, API server with %s)", rep+1, b.o.runs, shardedConfig, n, shardGates)
		r, err := b.runSharded(ctx, n)
		if err != nil {
			return nil, fmt.Errorf("metacel, %s, %d replica(s), run %d: %w", shardedConfig, n, rep+1, err)
		}
		logf("  %s", r.oneLine())
		results[n] = append(results[n], r)
		details = append(details, r.details())
	}
	return details, nil
}

// runSharded measures n sharded replicas of metacel on a fresh control plane with shardGates.
func (b *bench) runSharded(ctx context.Context, n int) (_ *shardedResult, err error) {
	s, err := b.newStage(ctx, myAppJob, metacel, nil, "METACEL_FEATURE_GATES="+shardGates)
	if err != nil {
		return nil, err
	}
	defer func() { s.close(err != nil || b.o.keep) }()
	procs, err := b.startReplicas(ctx, s, n)
	defer stopReplicas(procs)
	if err != nil {
		return nil, err
	}
	if err := b.waitSlots(ctx, procs); err != nil {
		return nil, err
	}
	// the replicas' start-up requests (lists, Leases, the slot table) are not the converge's
	w0, err := b.waitQuiet(ctx, s.cl, s.own, shardWork, procs...)
	if err != nil {
		return nil, err
	}
	before := readProcs(procs)
	r := &shardedResult{result: result{controller: metacel, config: shardedConfig, parents: b.o.parents}, replicas: n}
	start, err := b.burst(ctx, s, &r.result, procs...)
	if err != nil {
		return nil, err
	}
	w1, err := b.waitQuiet(ctx, s.cl, s.own, shardWork, procs...)
	if err != nil {
		return nil, err
	}
	r.settled = w1.at.Sub(start)
	after := readProcs(procs)
	if r.converged, r.apiserver, err = s.cl.attribute(w0, w1); err != nil {
		return nil, err
	}
	r.each, err = b.replicaStats(ctx, procs, before, after)
	return r, err
}

// startReplicas starts n replicas of metacel --shards=auto (metacel's defaults otherwise) and
// waits until each is ready; it returns those started, also on error.
func (b *bench) startReplicas(ctx context.Context, s *stage, n int) ([]*proc, error) {
	policy := filepath.Join(s.dir, "policy", "myapp.yaml")
	if err := copyFile(b.policy, policy); err != nil {
		return nil, err
	}
	var procs []*proc
	for _, id := range replicaIdentities(n) {
		p := &proc{kind: metacel, bin: b.o.metacelBin,
			args: []string{"--shards=auto", "--policy-namespace=" + policyNamespace, "--shard-identity=" + id}}
		if err := p.start(s.cl.kubeconfig(), policy, filepath.Join(s.dir, "logs", id+".log"), b.o.resync, false); err != nil {
			return procs, err
		}
		procs = append(procs, p)
	}
	for _, p := range procs {
		if err := p.waitReady(ctx, 60*time.Second); err != nil {
			return procs, err
		}
	}
	return procs, nil
}

// replicaIdentities are the --shard-identity of n replicas, in the order they split the slots.
func replicaIdentities(n int) []string {
	ids := make([]string, n)
	for i := range ids {
		ids[i] = fmt.Sprintf("replica-%02d", i+1)
	}
	return ids
}

// identity is a replica's --shard-identity.
func (p *proc) identity() string {
	for _, a := range p.args {
		if id, ok := strings.CutPrefix(a, "--shard-identity="); ok {
			return id
		}
	}
	return ""
}

// stopReplicas stops the replicas at once (each SIGTERM, then SIGKILL after 30 s).
func stopReplicas(procs []*proc) {
	var wg sync.WaitGroup
	for _, p := range procs {
		wg.Go(func() { p.stop(30 * time.Second) })
	}
	wg.Wait()
}

// waitSlots waits until every replica holds the slots shard.Assign gives it among all of them
// (metacel_shard_slots): the 64 slots are held, split as they will stay.
func (b *bench) waitSlots(ctx context.Context, procs []*proc) error {
	ids := make([]string, len(procs))
	for i, p := range procs {
		ids[i] = p.identity()
	}
	sort.Strings(ids)
	deadline := time.Now().Add(2 * time.Minute)
	for {
		held, split := b.slotsHeld(ctx, procs, ids)
		if split {
			logf("  the %d replica(s) hold the %d slots: %s", len(procs), hashslot.Count, held)
			return nil
		}
		if err := allAlive(procs); err != nil {
			return err
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("the replicas do not hold the %d slots as they split them after 2m: %s (logs: %s)", hashslot.Count, held, logsOf(procs))
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// slotsHeld reads each replica's metacel_shard_slots: a summary, and whether each holds what
// shard.Assign gives it among ids.
func (b *bench) slotsHeld(ctx context.Context, procs []*proc, ids []string) (string, bool) {
	var held []string
	split := true
	for _, p := range procs {
		n, err := p.gauge(ctx, "metacel_shard_slots", nil)
		want := float64(shard.Assign(ids, p.identity()).Count())
		if err != nil || n != want {
			split = false
		}
		held = append(held, fmt.Sprintf("%s %s of %s", p.identity(), num(n), num(want)))
	}
	return strings.Join(held, ", "), split
}

func readProcs(procs []*proc) []procStat {
	out := make([]procStat, len(procs))
	for i, p := range procs {
		out[i] = readProc(p.pid())
	}
	return out
}

// replicaStats is each replica's share: its slots, its parents once their sum is -parents (the
// gauge follows within a second; after 30 s, as they are), its RSS and its CPU between before
// and after.
func (b *bench) replicaStats(ctx context.Context, procs []*proc, before, after []procStat) ([]replicaStat, error) {
	parents, err := b.waitParents(ctx, procs)
	if err != nil {
		return nil, err
	}
	out := make([]replicaStat, len(procs))
	for i, p := range procs {
		slots, err := p.gauge(ctx, "metacel_shard_slots", nil)
		if err != nil {
			return nil, err
		}
		out[i] = replicaStat{identity: p.identity(), slots: slots, parents: parents[i],
			rss: after[i].HWM, rssNow: after[i].RSS, cpu: after[i].CPU - before[i].CPU, serverSelection: serverSelection(p.log)}
	}
	return out, nil
}

// waitParents reads each replica's metacel_policy_parents{policy="myapp"} until they sum to
// -parents, for at most 30 s.
func (b *bench) waitParents(ctx context.Context, procs []*proc) ([]float64, error) {
	deadline := time.Now().Add(30 * time.Second)
	for {
		parents := make([]float64, len(procs))
		sum := 0.0
		for i, p := range procs {
			n, err := p.gauge(ctx, "metacel_policy_parents", map[string]string{"policy": "myapp"})
			if err != nil {
				return nil, err
			}
			parents[i], sum = n, sum+n
		}
		if sum == float64(b.o.parents) {
			return parents, nil
		}
		if time.Now().After(deadline) {
			logf("  warning: the replicas' metacel_policy_parents sum to %s, not %d, after 30s", num(sum), b.o.parents)
			return parents, nil
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// serverSideRe is what a replica logs at start on whether the API server selects shards.
var serverSideRe = regexp.MustCompile(`serverSideShardSelectors"?[=:]\s*"?(true|false)`)

// serverSelection reads from a replica's log whether the API server selects shards: true,
// false, or ? when it says nothing.
func serverSelection(log string) string {
	raw, err := os.ReadFile(log)
	if err != nil {
		return "?"
	}
	m := serverSideRe.FindSubmatch(raw)
	if m == nil {
		return "?"
	}
	return string(m[1])
}

func (r *shardedResult) oneLine() string {
	var each []string
	for _, e := range r.each {
		each = append(each, fmt.Sprintf("%s: %s slots, %s parents, RSS %.0f MB (now %.0f), CPU %.1fs, server-side selection %s",
			e.identity, num(e.slots), num(e.parents), e.rss, e.rssNow, e.cpu, e.serverSelection))
	}
	return fmt.Sprintf("%d replica(s) converged in %.1fs (burst %.1fs, quiet at %.1fs), %s requests (Leases aside); %s",
		r.replicas, r.converge.Seconds(), r.created.Seconds(), r.settled.Seconds(), num(r.converged.total(shardWork)), strings.Join(each, "; "))
}

// details is a sharded run's full record, for the file.
func (r *shardedResult) details() string {
	var b strings.Builder
	fmt.Fprintf(&b, "### metacel, %s, %d replica(s) (--shards=auto, its defaults otherwise)\n\n", shardedConfig, r.replicas)
	fmt.Fprintf(&b, "- converged in %.1fs (burst %.1fs, quiet at %.1fs)\n", r.converge.Seconds(), r.created.Seconds(), r.settled.Seconds())
	fmt.Fprintf(&b, "- converge window (burst start until quiet, %.1fs), all replicas: %s\n", r.settled.Seconds(), r.converged.summary(requests, 100))
	fmt.Fprintf(&b, "- the API server's own requests in that window (taken out): %s\n", r.apiserver.summary(requests, 100))
	for _, e := range r.each {
		fmt.Fprintf(&b, "- %s: %s slots, %s parents, RSS %.0f MB peak (%.0f MB now), CPU %.1fs; the API server selects shards: %s\n",
			e.identity, num(e.slots), num(e.parents), e.rss, e.rssNow, e.cpu, e.serverSelection)
	}
	return b.String()
}

// shardedTable is the markdown table of the sharded runs, a row per count of replicas (the run
// with the median converge time), with ratios to the 1-replica row.
func (b *bench) shardedTable(results map[int][]*shardedResult) string {
	var t strings.Builder
	fmt.Fprintf(&t, "\nSharded replicas (metacel --shards=auto, its defaults otherwise; one API server with %s per run):\n\n", shardGates)
	t.WriteString("| replicas | converge s | quiet s | requests | RSS MB per replica | RSS MB, all | CPU s per replica | CPU s, all | parents per replica | slots per replica | API server selects shards |\n")
	t.WriteString("|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|---|\n")
	base := medianSharded(results[1])
	for _, n := range b.o.replicas {
		m := medianSharded(results[n])
		if m == nil {
			continue
		}
		ratio := func(v float64, of func(*shardedResult) float64, format string) string {
			s := fmt.Sprintf(format, v)
			if base != nil && m != base && of(base) > 0 {
				s += fmt.Sprintf(" (×%.1f)", v/of(base))
			}
			return s
		}
		converge := func(r *shardedResult) float64 { return r.converge.Seconds() }
		settled := func(r *shardedResult) float64 { return r.settled.Seconds() }
		rss := func(r *shardedResult) float64 { return r.sum(func(e replicaStat) float64 { return e.rss }) }
		cpu := func(r *shardedResult) float64 { return r.sum(func(e replicaStat) float64 { return e.cpu }) }
		fmt.Fprintf(&t, "| %d | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n", n,
			ratio(converge(m), converge, "%.1f"),
			ratio(settled(m), settled, "%.1f"),
			num(m.converged.total(shardWork)),
			m.perReplica(func(e replicaStat) string { return fmt.Sprintf("%.0f", e.rss) }),
			ratio(rss(m), rss, "%.0f"),
			m.perReplica(func(e replicaStat) string { return fmt.Sprintf("%.1f", e.cpu) }),
			ratio(cpu(m), cpu, "%.1f"),
			m.perReplica(func(e replicaStat) string { return num(e.parents) }),
			m.perReplica(func(e replicaStat) string { return num(e.slots) }),
			m.perReplica(func(e replicaStat) string { return e.serverSelection }))
	}
	t.WriteString(shardedLegend)
	return t.String()
}

// medianSharded is the run with the median converge time.
func medianSharded(rs []*shardedResult) *shardedResult {
	if len(rs) == 0 {
		return nil
	}
	byConverge := slices.Clone(rs)
	sort.Slice(byConverge, func(i, j int) bool { return byConverge[i].converge < byConverge[j].converge })
	return byConverge[len(byConverge)/2]
}

func (r *shardedResult) sum(f func(replicaStat) float64) float64 {
	total := 0.0
	for _, e := range r.each {
		total += f(e)
	}
	return total
}

// perReplica is f of every replica, in the order of their identities, joined.
func (r *shardedResult) perReplica(f func(replicaStat) string) string {
	out := make([]string, len(r.each))
	for i, e := range r.each {
		out[i] = f(e)
	}
	return strings.Join(out, " / ")
}

// shardedLegend says what the sharded table's columns are.
const shardedLegend = `
Columns: **replicas**, metacel processes with --shards=auto and their own --shard-identity, started
together and holding the 64 slots as they split them before the burst; **converge s** and **quiet
s** as above, quiet judged on the replicas' syncs summed and the API server's requests but their
Leases' renewals; **requests**, the replicas' requests in the converge window (resource requests,
WATCH, events and Leases aside); **RSS MB per replica**, the peak resident memory (VmHWM) of
each at the end of the converge window, and **RSS MB, all**, their sum; **CPU s per replica**,
the user and system CPU seconds of each in the converge window, and **CPU s, all**, their sum;
**parents per replica**, each one's metacel_policy_parents{policy="myapp"} after converging;
**slots per replica**, its metacel_shard_slots; **API server selects shards**, what each logged
at start (serverSideShardSelectors). Per replica, in the order of the identities (replica-01,
...). With -runs above 1, each row is the run with the median converge time. Ratios are to the
1-replica row.
`
