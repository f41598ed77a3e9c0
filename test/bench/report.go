//go:build e2e

package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"sort"
	"strings"
	"time"
)

// result is one run of one controller in one configuration.
type result struct {
	controller, config, flags string
	sharedWith                string // the configuration whose run this is (same flags)
	parents                   int
	created                   time.Duration  // the burst of creates
	converge                  time.Duration  // burst start to every parent done
	settled                   time.Duration  // burst start to the API server and controller quiet
	converged                 counts         // the controller's requests, burst start to settled
	apiserver                 byUser         // the control plane's own requests in that window (the API server's; with nodes the scheduler's and kwok's)
	actsAs                    string         // the ServiceAccount metacel's policy acts as ("": the runtime itself)
	startup                   counts         // the controller's requests from its start until quiet, before the burst
	nodes                     bool           // on a control plane with nodes (-configs nodes)
	running                   time.Duration  // with nodes: burst start to every Pod bound and Running
	idle                      counts         // the controller's requests in the idle window
	events                    counts         // its requests from burst start to the end of the idle window, for its events
	idleSyncs                 float64        // its syncs in the idle window (a resync: at least parents)
	rss, rssNow               float64        // MB: peak (VmHWM) and current, at the end of the idle window
	cpu, cpuIdle              float64        // CPU seconds: converge window, idle window
	rssFile, rssAnon          float64        // MB resident at the end of the idle window: the binary's file pages, anonymous
	binaryPages               string         // the binary's file pages then by section (residencySummary), or why not read
	rssStart                  float64        // MB resident before the burst: caches synced, no parent yet (the fixed part)
	serverCPU                 float64        // CPU seconds of kube-apiserver and etcd in the converge window
	restarts                  []restart      // each restart over the converged parents
	restartCPU                float64        // median of the restarts': CPU seconds of the restarted controller until re-synced
	restartServerCPU          float64        // median of the restarts': CPU seconds of kube-apiserver and etcd from the restart until re-synced
	restart                   time.Duration  // median of the restarts': process start to every parent re-synced
	restarted                 counts         // the restarted controller's requests until quiet, in all restarts
	restartSyncs              float64        // the most syncs of one restart until quiet
	changeFirst, changeAll    time.Duration  // the controller told the policy change to the first and to every Pod replaced
	changeCreated             time.Duration  // the controller told the policy change to every Pod created anew (with nodes, before it is bound and Running)
	changed                   counts         // its requests from the policy change until quiet
	changedControlPlane       byUser         // the control plane's own in that window
	noop                      noopResult     // the no-op policy change
	editsResync, editsIdle    editResult     // one parent's edit at a time: during a resync, while idle
	profile, heap             string         // pprof -top of metacel's CPU (converge) and heap (after idle)
	serverProfile             *serverProfile // kube-apiserver's CPU from the burst on
	restartServerProfile      *serverProfile // kube-apiserver's CPU from the first restart on
	restartProfile            string         // pprof -top of metacel's CPU from its first restart on
}

// restart is one restart of a controller over its converged parents.
type restart struct {
	took           time.Duration // process start to every parent re-synced
	cpu, serverCPU float64       // CPU seconds until then: the controller's, kube-apiserver's and etcd's
	// cacheChecks are the API server's consistency checks of its watch cache until then
	// (cluster.cacheChecks): a restart that holds one waits for the API server's own work
	cacheChecks float64
}

// medianRestart is the median of each of the restarts' figures.
func medianRestart(rs []restart) (took time.Duration, cpu, serverCPU float64) {
	if len(rs) == 0 {
		return 0, 0, 0
	}
	return time.Duration(medianBy(rs, func(r restart) float64 { return float64(r.took) })),
		medianBy(rs, func(r restart) float64 { return r.cpu }), medianBy(rs, func(r restart) float64 { return r.serverCPU })
}

func (r *result) oneLine() string {
	return fmt.Sprintf("converged in %.1fs (burst %.1fs, quiet at %.1fs), %s requests, %s writes, %s event writes; idle: %s writes, %s syncs; RSS %.0f MB, CPU %.1fs; restart %.1fs, %s writes%s",
		r.converge.Seconds(), r.created.Seconds(), r.settled.Seconds(), num(r.converged.total(work)), num(r.converged.total(workWrites)),
		num(r.events.total(eventWrites)), num(r.idle.total(workWrites)), num(r.idleSyncs), r.rss, r.cpu, r.restart.Seconds(), num(r.restarted.total(writes)),
		r.restartCacheChecks())
}

// restartCacheChecks says how many of the restarts held a consistency check of the API server's
// watch cache ("" when none did).
func (r *result) restartCacheChecks() string {
	n := 0
	for _, rs := range r.restarts {
		if rs.cacheChecks > 0 {
			n++
		}
	}
	if n == 0 {
		return ""
	}
	return fmt.Sprintf(" (%d of %d restarts held the API server's watch cache check)", n, len(r.restarts))
}

// restartTimes lists each restart's time, in seconds, with the API server's cache checks in it.
func (r *result) restartTimes() string {
	t := make([]string, len(r.restarts))
	for i, rs := range r.restarts {
		t[i] = fmt.Sprintf("%.2f", rs.took.Seconds())
		if rs.cacheChecks > 0 {
			t[i] += fmt.Sprintf(" (%s consistency checks of the API server's watch cache in it)", num(rs.cacheChecks))
		}
	}
	return strings.Join(t, ", ")
}

// details is a run's full record, for the file.
func (r *result) details() string {
	var b strings.Builder
	fmt.Fprintf(&b, "### %s, %s (%s)\n\n", r.controller, r.config, orDefault(r.flags, "its defaults"))
	fmt.Fprintf(&b, "- %s\n", r.oneLine())
	if r.actsAs != "" {
		fmt.Fprintf(&b, "- the policy acts as its ServiceAccount %s (impersonated); access reviews: %s\n", r.actsAs, r.reviewsLine())
	}
	fmt.Fprintf(&b, "- start-up (process start until quiet, before the burst): %s\n", r.startup.summary(requests, 100))
	fmt.Fprintf(&b, "- converge window (burst start until quiet, %.1fs): %s\n", r.settled.Seconds(), r.converged.summary(requests, 100))
	fmt.Fprintf(&b, "- the control plane's own requests in that window (taken out): %s\n", r.apiserver.summary(requests, 100))
	if r.nodes {
		fmt.Fprintf(&b, "- every Pod bound and Running %.1fs after the burst's start\n", r.running.Seconds())
	}
	fmt.Fprintf(&b, "- control plane (kube-apiserver and etcd) CPU in that window: %.1fs\n", r.serverCPU)
	fmt.Fprintf(&b, "- idle window: %s (CPU %.2fs, RSS now %.0f MB: %.0f MB of the binary's file pages, %.0f MB anonymous)\n",
		r.idle.summary(requests, 100), r.cpuIdle, r.rssNow, r.rssFile, r.rssAnon)
	if r.binaryPages != "" {
		fmt.Fprintf(&b, "- the binary's file pages then, resident by section: %s\n", r.binaryPages)
	}
	fmt.Fprintf(&b, "- %d restarts: re-synced after %s s (median %.2fs), CPU %.2fs (control plane %.2fs); until quiet (at most %s syncs), in all: %s\n",
		len(r.restarts), r.restartTimes(), r.restart.Seconds(), r.restartCPU, r.restartServerCPU, num(r.restartSyncs), r.restarted.summary(requests, 100))
	if r.changeAll > 0 {
		fmt.Fprintf(&b, "- policy change: first Pod replaced after %.2fs, every Pod created anew after %.1fs, every Pod replaced after %.1fs; until quiet: %s; the control plane's own (taken out): %s\n",
			r.changeFirst.Seconds(), r.changeCreated.Seconds(), r.changeAll.Seconds(), r.changed.summary(work, 100), r.changedControlPlane.summary(requests, 100))
	}
	if line := r.noop.details(); line != "" {
		fmt.Fprintf(&b, "- no-op policy change: %s\n", line)
	}
	if line := r.editsResync.details(); line != "" {
		fmt.Fprintf(&b, "- edits during a resync: %s\n", line)
	}
	if line := r.editsIdle.details(); line != "" {
		fmt.Fprintf(&b, "- edits while idle: %s\n", line)
	}
	if r.profile != "" {
		fmt.Fprintf(&b, "- CPU profile from the burst on: %s\n", r.profile)
	}
	if r.heap != "" {
		fmt.Fprintf(&b, "- heap profile at the end of the idle window: %s\n", r.heap)
	}
	if r.restartProfile != "" {
		fmt.Fprintf(&b, "- CPU profile from the first restart on: %s\n", r.restartProfile)
	}
	return b.String()
}

func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// header describes the machine and the command; runs says whether controllers ran (the per-run
// settings apply).
func (b *bench) header(title, metacelDefaults string, runs bool) string {
	var h strings.Builder
	fmt.Fprintf(&h, "# %s\n\n", title)
	fmt.Fprintf(&h, "- date: %s\n", time.Now().Format("2006-01-02 15:04 MST"))
	fmt.Fprintf(&h, "- command: `go run -tags e2e ./test/bench %s` (`make bench-e2e` runs it)\n", strings.Join(os.Args[1:], " "))
	fmt.Fprintf(&h, "- machine: %d CPUs (%s), %s memory, load average at start %s\n", runtime.NumCPU(), cpuModel(), memTotal(), loadAvg())
	fmt.Fprintf(&h, "- %s, kube-apiserver %s and etcd from hack/control-plane.sh (METACEL_COMPONENTS=\"etcd kube-apiserver\"; configuration %s: \"etcd kube-apiserver kube-scheduler kwok\", kwok's node %s)\n",
		goVersion(), orDefault(b.version, "?"), nodesConfig, strings.Join(benchNodes, ", "))
	built := b.built
	if built == "" {
		built = gitDescribe(b.repo, "HEAD") + " (the work tree at the report's end)"
	}
	if b.o.metacelRev != "" {
		built = gitDescribe(b.repo, b.o.metacelRev) + " (-metacel-rev " + b.o.metacelRev + ")"
	}
	fmt.Fprintf(&h, "- metacel: %s; metacel run's defaults: %s\n", built, metacelDefaults)
	if runs {
		fmt.Fprintf(&h, "- per run: %d parents, resync %s, idle window %s, a window closes after %s without requests; %d run(s) each, medians\n",
			b.o.parents, b.o.resync, b.o.idle, b.o.quiet, b.o.runs)
	}
	return h.String()
}

// table is the markdown table of medians, with ratios against the hand-written row of the
// same configuration.
func (b *bench) table(configs []benchConfig, results map[string][]*result) string {
	var t strings.Builder
	fmt.Fprintf(&t, "| controller | configuration | converge s | quiet s | requests | requests by verb and resource | event writes | idle writes | RSS MB | RSS before the burst MB | RSS now: file + anon MB | CPU s | control plane CPU s | restart s | restart writes |\n")
	fmt.Fprintf(&t, "|---|---|--:|--:|--:|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|\n")
	for _, c := range configs {
		base := medians(results[c.baselineOf()+"/"+c.name])
		if base == nil {
			base = &result{} // no ratios
		}
		for _, ctl := range c.controllers() {
			rs := results[ctl+"/"+c.name]
			m := medians(rs)
			if m == nil {
				continue
			}
			ratio := func(v, h float64, format string) string {
				s := fmt.Sprintf(format, v)
				if ctl == metacel {
					switch {
					case h > 0:
						s += fmt.Sprintf(" (×%.1f)", v/h)
					case v > 0:
						s += " (×∞)"
					}
				}
				return s
			}
			name := ctl
			if m.sharedWith != "" {
				name += " (the " + m.sharedWith + " run)"
			}
			fmt.Fprintf(&t, "| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n",
				name, c.name,
				ratio(m.converge.Seconds(), base.converge.Seconds(), "%.1f"),
				ratio(m.settled.Seconds(), base.settled.Seconds(), "%.1f"),
				ratio(m.converged.total(work), base.converged.total(work), "%.0f"),
				m.converged.summary(work, 6),
				ratio(m.events.total(eventWrites), base.events.total(eventWrites), "%.0f"),
				ratio(m.idle.total(workWrites), base.idle.total(workWrites), "%.0f"),
				ratio(m.rss, base.rss, "%.0f"),
				ratio(m.rssStart, base.rssStart, "%.0f"),
				fmt.Sprintf("%.0f + %.0f", m.rssFile, m.rssAnon),
				ratio(m.cpu, base.cpu, "%.1f"),
				ratio(m.serverCPU, base.serverCPU, "%.1f"),
				ratio(m.restart.Seconds(), base.restart.Seconds(), "%.1f"),
				ratio(m.restarted.total(writes), base.restarted.total(writes), "%.0f"))
		}
	}
	t.WriteString(pairedRatios(configs, results))
	t.WriteString(impersonationTable(configs, results))
	t.WriteString(changeTable(configs, results))
	t.WriteString(steadyTable(configs, results))
	for _, c := range configs {
		if hand, meta := results[c.baselineOf()+"/"+c.name], results[metacel+"/"+c.name]; len(hand) > 0 && len(meta) > 0 {
			t.WriteString(serverProfileTable(c.name+", the converge", c.baselineOf(), hand[0].serverProfile, meta[0].serverProfile, b.o.profile))
			t.WriteString(serverProfileTable(c.name+", the first restart", c.baselineOf(), hand[0].restartServerProfile, meta[0].restartServerProfile, b.o.profileRestart))
		}
	}
	var notes []string
	for _, c := range configs {
		notes = append(notes, fmt.Sprintf("%s: %s", c.name, c.desc))
	}
	fmt.Fprintf(&t, "\nConfigurations: %s.\n\n", strings.Join(notes, "; "))
	t.WriteString(legend)
	return t.String()
}

// changeTable is the table of the policy changes, both controllers': the time to the first Pod
// replaced, to every Pod created anew and to every Pod replaced, and the requests until quiet;
// metacel's with their ratio to the hand-written controller's of the same configuration. Beside
// them, how long the burst took to do the same from nothing.
func changeTable(configs []benchConfig, results map[string][]*result) string {
	var rows []string
	for _, c := range configs {
		base := medians(results[c.baselineOf()+"/"+c.name])
		for _, ctl := range c.controllers() {
			m := medians(results[ctl+"/"+c.name])
			if m == nil || m.changeAll == 0 {
				continue
			}
			ratio := func(f func(*result) float64, format string) string {
				s := fmt.Sprintf(format, f(m))
				if ctl == metacel && base != nil && f(base) > 0 {
					s += fmt.Sprintf(" (×%.1f)", f(m)/f(base))
				}
				return s
			}
			running := "–"
			if m.nodes {
				running = fmt.Sprintf("%.1f", m.running.Seconds())
			}
			rows = append(rows, fmt.Sprintf("| %s | %s | %.1f | %s | %s | %s | %s | %s | %s |", c.name, ctl, m.converge.Seconds(), running,
				ratio(func(r *result) float64 { return r.changeFirst.Seconds() }, "%.2f"),
				ratio(func(r *result) float64 { return r.changeCreated.Seconds() }, "%.1f"),
				ratio(func(r *result) float64 { return r.changeAll.Seconds() }, "%.1f"),
				ratio(func(r *result) float64 { return r.changed.total(work) }, "%.0f"),
				m.changed.summary(work, 6)))
		}
	}
	if len(rows) == 0 {
		return ""
	}
	return "\nPolicy change: each controller told that every child gains a label (metacel: its policy file rewritten; the others: their file of child labels rewritten and SIGHUP). A MyApp's Pod is replaced (metacel's `Recreate`): DELETE, the deletion seen through a watch, POST; a Memcached's Deployment is updated in place. On `" + nodesConfig + "` a Pod is replaced once bound and Running with the label; elsewhere once it has the label:\n\n" +
		"| configuration | controller | burst: converge s | burst: every Pod bound and Running s | change: first Pod replaced s | change: every Pod created anew s | change: every Pod replaced s | change: requests until quiet | by verb and resource |\n" +
		"|---|---|--:|--:|--:|--:|--:|--:|---|\n" + strings.Join(rows, "\n") + "\n"
}

// steadyTable is the table of the no-op policy change and of one edit's latency, both
// controllers' (n/a where a controller has no such thing, and why); metacel's times with their
// ratio to the baseline's of the same configuration.
func steadyTable(configs []benchConfig, results map[string][]*result) string {
	var rows []string
	for _, c := range configs {
		base := medians(results[c.baselineOf()+"/"+c.name])
		for _, ctl := range c.controllers() {
			m := medians(results[ctl+"/"+c.name])
			if m == nil || !m.steadyMeasured() {
				continue
			}
			var b *result
			if ctl == metacel {
				b = base
			}
			rows = append(rows, "| "+strings.Join(append([]string{c.name, ctl}, steadyCells(m, b)...), " | ")+" |")
		}
	}
	if len(rows) == 0 {
		return ""
	}
	return "\nNo-op policy change and one edit's latency. No-op: metacel's policy file rewritten with an annotation nothing reads (a new version: a new controller syncs every parent; every render as before); the others: their file of child labels rewritten as it was and SIGHUP. Edits: one MyApp's spec.banner at a time, from the edit's response to its Pod's first write seen through a watch (its deletion: a Recreate); while idle, each once the previous one's Pod write was seen, just after a resync; during the next resync, one every spacing from its first sync:\n\n" +
		"| configuration | controller | no-op: every parent decided s | no-op: writes | no-op: syncs | edits while idle: p50 / p99 / max ms | while idle: writes per edit | edits during a resync: p50 / p99 / max ms | during a resync: edits in it, its length s, spacing ms |\n" +
		"|---|---|--:|--:|--:|--:|--:|--:|--:|\n" + strings.Join(rows, "\n") + "\n"
}

// steadyMeasured says whether the run measured a no-op change or edits (or said why not).
func (r *result) steadyMeasured() bool {
	return r.noop.took > 0 || r.noop.na != "" || r.editsIdle.stats.n > 0 || r.editsIdle.na != "" || r.editsResync.stats.n > 0 || r.editsResync.na != ""
}

// steadyCells are a row's cells of steadyTable; base (nil: none) is the row metacel's times are
// divided by.
func steadyCells(m, base *result) []string {
	ratio := func(v, h float64, format string) string {
		s := fmt.Sprintf(format, v)
		if base != nil && h > 0 {
			s += fmt.Sprintf(" (×%.1f)", v/h)
		}
		return s
	}
	cells := make([]string, 0, 7)
	switch {
	case m.noop.na != "":
		cells = append(cells, m.noop.na, "–", "–")
	case m.noop.took == 0:
		cells = append(cells, "–", "–", "–")
	default:
		var h float64
		if base != nil {
			h = base.noop.took.Seconds()
		}
		cells = append(cells, ratio(m.noop.took.Seconds(), h, "%.2f"), num(m.noop.requests.total(writes)), num(m.noop.syncs))
	}
	edits := func(e editResult, b *editResult) string {
		switch {
		case e.na != "":
			return e.na
		case e.stats.n == 0:
			return "–"
		}
		ms := func(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
		var h latencyStats
		if b != nil {
			h = b.stats
		}
		return ratio(ms(e.stats.p50), ms(h.p50), "%.0f") + " / " + ratio(ms(e.stats.p99), ms(h.p99), "%.0f") + " / " + ratio(ms(e.stats.max), ms(h.max), "%.0f")
	}
	var bResync, bIdle *editResult
	if base != nil {
		bResync, bIdle = &base.editsResync, &base.editsIdle
	}
	cells = append(cells, edits(m.editsIdle, bIdle))
	if n := m.editsIdle.stats.n; n > 0 {
		perEdit := fmt.Sprintf("%.1f", m.editsIdle.requests.total(writes)/float64(n))
		if !m.editsIdle.clear {
			perEdit += " (a resync may have overlapped)"
		}
		cells = append(cells, perEdit)
	} else {
		cells = append(cells, "–")
	}
	cells = append(cells, edits(m.editsResync, bResync))
	if m.editsResync.stats.n > 0 {
		cells = append(cells, fmt.Sprintf("%d of %d, %s, %.0f", m.editsResync.during, m.editsResync.stats.n, resyncLength(m.editsResync.resync), float64(m.editsResync.spacing)/float64(time.Millisecond)))
	} else {
		cells = append(cells, "–")
	}
	return cells
}

// resyncLength is a resync's length in seconds, "<0.02" when shorter than the 20 ms its watch
// polls at.
func resyncLength(d time.Duration) string {
	if d < 20*time.Millisecond {
		return "<0.02"
	}
	return fmt.Sprintf("%.2f", d.Seconds())
}

// details is a no-op change's line of a run's record ("": not run).
func (n noopResult) details() string {
	switch {
	case n.na != "":
		return n.na
	case n.took == 0:
		return ""
	}
	reloaded := ""
	if n.reloaded > 0 {
		reloaded = fmt.Sprintf("the new generation running after %.2fs, ", n.reloaded.Seconds())
	}
	return fmt.Sprintf("%severy parent decided after %.2fs; until quiet: %s syncs, %s writes (%s)", reloaded, n.took.Seconds(), num(n.syncs), num(n.requests.total(writes)), n.requests.summary(requests, 100))
}

// details is a phase of edits' line of a run's record ("": not run).
func (e editResult) details() string {
	switch {
	case e.na != "":
		return e.na
	case e.stats.n == 0:
		return ""
	}
	ms := make([]string, len(e.latencies))
	for i, l := range e.latencies {
		ms[i] = fmt.Sprintf("%.0f", float64(l)/float64(time.Millisecond))
	}
	how := fmt.Sprintf("each once the previous one's child write was seen, after a resync of %ss", resyncLength(e.resync))
	if e.spacing > 0 {
		how = fmt.Sprintf("one every %.1f ms; %d issued before the resync ended (it took %ss)", float64(e.spacing)/float64(time.Millisecond), e.during, resyncLength(e.resync))
	} else if !e.clear {
		how += "; the next resync may have overlapped them"
	}
	return fmt.Sprintf("%d edits (%s), the first to the last child write %.2fs; latency p50 %.0f ms, p99 %.0f ms, max %.0f ms; until quiet: %s; each edit's ms: %s",
		e.stats.n, how, e.span.Seconds(), float64(e.stats.p50)/float64(time.Millisecond), float64(e.stats.p99)/float64(time.Millisecond),
		float64(e.stats.max)/float64(time.Millisecond), e.requests.summary(requests, 100), strings.Join(ms, " "))
}

// medianBy is the median of f over xs (not empty).
func medianBy[T any](xs []T, f func(T) float64) float64 {
	v := make([]float64, len(xs))
	for i, x := range xs {
		v[i] = f(x)
	}
	sort.Float64s(v)
	if len(v)%2 == 1 {
		return v[len(v)/2]
	}
	return (v[len(v)/2-1] + v[len(v)/2]) / 2
}

// medians is a result whose every figure is the median over rs; its requests are those of the
// run with the median converge time.
func medians(rs []*result) *result {
	if len(rs) == 0 {
		return nil
	}
	byConverge := slices.Clone(rs)
	sort.Slice(byConverge, func(i, j int) bool { return byConverge[i].converge < byConverge[j].converge })
	m := *byConverge[len(byConverge)/2]
	med := func(f func(*result) float64) float64 { return medianBy(rs, f) }
	seconds := func(f func(*result) time.Duration) time.Duration {
		return time.Duration(med(func(r *result) float64 { return float64(f(r)) }))
	}
	m.converge = seconds(func(r *result) time.Duration { return r.converge })
	m.created = seconds(func(r *result) time.Duration { return r.created })
	m.restart = seconds(func(r *result) time.Duration { return r.restart })
	m.settled = seconds(func(r *result) time.Duration { return r.settled })
	m.rss = med(func(r *result) float64 { return r.rss })
	m.cpu = med(func(r *result) float64 { return r.cpu })
	m.rssFile = med(func(r *result) float64 { return r.rssFile })
	m.rssStart = med(func(r *result) float64 { return r.rssStart })
	m.rssAnon = med(func(r *result) float64 { return r.rssAnon })
	m.serverCPU = med(func(r *result) float64 { return r.serverCPU })
	m.restartCPU = med(func(r *result) float64 { return r.restartCPU })
	m.restartServerCPU = med(func(r *result) float64 { return r.restartServerCPU })
	// the request counts are the median run's, but its totals are medians too
	m.converged = medianCounts(rs, func(r *result) counts { return r.converged })
	m.changeFirst = seconds(func(r *result) time.Duration { return r.changeFirst })
	m.changeAll = seconds(func(r *result) time.Duration { return r.changeAll })
	m.changeCreated = seconds(func(r *result) time.Duration { return r.changeCreated })
	m.running = seconds(func(r *result) time.Duration { return r.running })
	m.changed = medianCounts(rs, func(r *result) counts { return r.changed })
	m.startup = medianCounts(rs, func(r *result) counts { return r.startup })
	m.idle = medianCounts(rs, func(r *result) counts { return r.idle })
	m.events = medianCounts(rs, func(r *result) counts { return r.events })
	m.restarted = medianCounts(rs, func(r *result) counts { return r.restarted })
	m.noop = medianNoop(rs)
	m.editsResync = medianEdits(rs, func(r *result) editResult { return r.editsResync })
	m.editsIdle = medianEdits(rs, func(r *result) editResult { return r.editsIdle })
	return &m
}

// medianNoop is the no-op changes' figures, the median of each over rs (not empty).
func medianNoop(rs []*result) noopResult {
	m := rs[0].noop
	m.took = time.Duration(medianBy(rs, func(r *result) float64 { return float64(r.noop.took) }))
	m.reloaded = time.Duration(medianBy(rs, func(r *result) float64 { return float64(r.noop.reloaded) }))
	m.syncs = medianBy(rs, func(r *result) float64 { return r.noop.syncs })
	m.requests = medianCounts(rs, func(r *result) counts { return r.noop.requests })
	return m
}

// medianEdits is a phase of edits' figures (f's), the median of each over rs (not empty); its
// latencies are the first run's, and it is clear of resyncs only when every run was.
func medianEdits(rs []*result, f func(*result) editResult) editResult {
	m := f(rs[0])
	med := func(g func(editResult) float64) float64 {
		return medianBy(rs, func(r *result) float64 { return g(f(r)) })
	}
	dur := func(g func(editResult) time.Duration) time.Duration {
		return time.Duration(med(func(e editResult) float64 { return float64(g(e)) }))
	}
	m.stats.p50 = dur(func(e editResult) time.Duration { return e.stats.p50 })
	m.stats.p99 = dur(func(e editResult) time.Duration { return e.stats.p99 })
	m.stats.max = dur(func(e editResult) time.Duration { return e.stats.max })
	m.span = dur(func(e editResult) time.Duration { return e.span })
	m.resync = dur(func(e editResult) time.Duration { return e.resync })
	m.spacing = dur(func(e editResult) time.Duration { return e.spacing })
	m.during = int(med(func(e editResult) float64 { return float64(e.during) }))
	m.requests = medianCounts(rs, func(r *result) counts { return f(r).requests })
	for _, r := range rs {
		m.clear = m.clear && f(r).clear
	}
	return m
}

// medianCounts is the median of each series.
func medianCounts(rs []*result, f func(*result) counts) counts {
	keys := map[reqKey]bool{}
	for _, r := range rs {
		for k := range f(r) {
			keys[k] = true
		}
	}
	out := counts{}
	for k := range keys {
		v := make([]float64, len(rs))
		for i, r := range rs {
			v[i] = f(r)[k]
		}
		sort.Float64s(v)
		if len(v)%2 == 1 {
			out[k] = v[len(v)/2]
		} else {
			out[k] = (v[len(v)/2-1] + v[len(v)/2]) / 2
		}
		if out[k] == 0 {
			delete(out, k)
		}
	}
	return out
}

func download(ctx context.Context, url, path string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, http.NoBody)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer func() { _ = resp.Body.Close() }()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if _, err := io.Copy(f, resp.Body); err != nil {
		_ = f.Close()
		return err
	}
	return f.Close()
}

func cpuModel() string {
	b, _ := os.ReadFile("/proc/cpuinfo")
	for line := range strings.SplitSeq(string(b), "\n") {
		if k, v, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(k) == "model name" {
			return strings.TrimSpace(v)
		}
	}
	return "?"
}

func memTotal() string {
	b, _ := os.ReadFile("/proc/meminfo")
	for line := range strings.SplitSeq(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "MemTotal:"); ok {
			var kb float64
			_, _ = fmt.Sscanf(strings.TrimSpace(v), "%f", &kb)
			return fmt.Sprintf("%.1f GiB", kb/1024/1024)
		}
	}
	return "?"
}

func loadAvg() string {
	b, _ := os.ReadFile("/proc/loadavg")
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "?"
	}
	return strings.Join(f[:3], " ")
}

func goVersion() string {
	out, err := exec.Command("go", "version").Output()
	if err != nil {
		return runtime.Version()
	}
	return strings.TrimSpace(string(out))
}

func gitDescribe(repo, rev string) string {
	cmd := exec.Command("git", "describe", "--always", rev)
	cmd.Dir = repo
	out, err := cmd.Output()
	if err != nil {
		return "?"
	}
	return "commit " + strings.TrimSpace(string(out))
}

// legend says what the columns are.
const legend = `Columns: **converge s**, from the first create of the burst until every Pod exists and every
MyApp's status.podName is set (metacel: and its Synced condition is True), seen through watches
(for Memcacheds: every Deployment exists with the size, and every Memcached has its Available
condition);
**quiet s**, until the API server has counted none of the controller's requests (WATCH and
events aside) and the controller no sync for the quiet period, its queue empty: the converge
window, which the next columns count; **requests**, the controller's requests in that window by
apiserver_request_total (resource requests, WATCH and events aside; a failure shows its code;
access reviews, SubjectAccessReviews and the like, are requests but not writes: the API server
answers them and stores nothing);
**event writes**, its writes to events from the burst until the end of the idle window (they go
out on their own queue and rate, and may outlast the converge window); **idle writes**, its
writes but events in the idle window that follows (longer than a resync period); **RSS MB**, its
peak resident memory (VmHWM) at the end of the idle window; **RSS before the burst MB**, its
resident memory once its caches had synced, before the first parent (what it costs with no
parents: binary, libraries, policy); **RSS now: file + anon MB**, its
resident memory then, split into the binary's file pages (code and read-only data; the kernel maps
the pages around each one touched, so a larger binary is more of them; each run's details give
them by section, read from /proc/<pid>/pagemap) and anonymous memory
(heap, stacks); **CPU s**, its user and system CPU seconds in the converge window; **control
plane CPU s**, kube-apiserver's and etcd's in the same window (what its requests cost the
server); **restart s**, from starting it again (after a SIGTERM) until it
has synced as many times as there are parents with an empty queue, the median of the run's
restarts (-restarts; a run's record names a restart that held a consistency check of the API
server's watch cache, apiserver_storage_consistency_checks_total: every 5 minutes it lists every
object from etcd, which at 100,000 parents keeps the API server busy about half a minute, and
the restart waits for it); **restart writes**, its writes from each start until quiet, in all
restarts. metacel's rows give their ratio to the row above, the baseline of the same
configuration (the hand-written controller, or the framework's operator).
The policy change's table: **burst: converge s**, as above; **burst: every Pod bound and
Running s** (on a control plane with nodes), from the first create of the burst until every Pod
is bound and Running; **change: first Pod replaced s** and **every Pod replaced s**, from
telling the controller (metacel: its policy file renamed into place; the hand-written controller:
SIGHUP after its --pod-labels file was) until the first and every Pod carries the label and is not
being deleted, and with nodes is also bound and Running, seen through a watch; **every Pod created
anew s**, until every Pod carries the label and is not being deleted (the controller's part; with
nodes the scheduler's binding and kwok's status follow); **requests until quiet**, the
controller's requests from telling it until quiet (the scheduler's and kwok's taken out).
The no-op change's and edits' table: **no-op: every parent decided s**, from telling the
controller (metacel: its policy file renamed into place with an annotation nothing reads; the
others: SIGHUP after their file of child labels was rewritten as it was) until its queue is empty
and its syncs have grown by the parents (metacel: also its syncs of an informer event,
metacel_sync_event_latency_seconds' count, which a resync's do not add to, under its policy's
next generation, metacel_policy_info), or, for a metacel that takes the change for the version it
runs, until its metacel_policy_same_version_loads_total grew (nothing to sync); **no-op: writes**, its writes (events included) from
telling it until quiet, and **syncs** its syncs then; **edits ... p50 / p99 / max ms**, over the
-edits edits of a phase, each from the response to the load client's merge patch of a MyApp's
spec.banner until the load client's watch, started before the edits, sees its Pod's first write
(its deletion, metacel's Recreate and the controller-runtime operator's replacement; 0 when the
watch saw it before the response); **while idle**, each edit once the previous one's Pod write
was seen, from just after a resync (a resync period clear of the next); **writes per edit**, the
controller's writes from the first edit until quiet over the edits; **during a resync**, the
edits issued one every spacing from the first sync of the next resync seen (a sync of no
informer event: metacel's syncs of events are counted apart), how many were issued before it
ended (every parent synced again, the queue empty; polled every 20 ms), its length, and the
spacing (-edit-spacing; by default the length of the resync before spread over the edits, at
least the idle edits' p99, so that the edits do not overlap each other but for the resync). The hand-written
controller and the Kopf-style one do not replace a Pod when a MyApp's spec changes: their edits
are n/a.
`

// pairedRatios is, per configuration, the median of each run's ratio to the hand-written run of
// the same repetition (run just before it): on a shared machine whose speed drifts between
// repetitions, a ratio of medians can pair a fast run with a slow one.
func pairedRatios(configs []benchConfig, results map[string][]*result) string {
	var lines []string
	for _, c := range configs {
		ours, theirs := results[metacel+"/"+c.name], results[c.baselineOf()+"/"+c.name]
		if len(ours) < 1 || len(ours) != len(theirs) || (len(ours) < 2 && c.baseline == "") {
			continue
		}
		ratio := func(f func(*result) float64) string { return pairedRatio(ours, theirs, f) }
		lines = append(lines, fmt.Sprintf("| %s | %s | %s | %s | %s | %s | %s | %s |", c.name,
			ratio(func(r *result) float64 { return r.converge.Seconds() }),
			ratio(func(r *result) float64 { return r.rss }),
			ratio(func(r *result) float64 { return r.cpu }),
			ratio(func(r *result) float64 { return r.serverCPU }),
			ratio(func(r *result) float64 { return r.restart.Seconds() }),
			ratio(func(r *result) float64 { return r.changeAll.Seconds() }),
			ratio(func(r *result) float64 { return r.created.Seconds() })))
	}
	if len(lines) == 0 {
		return ""
	}
	return "\nPaired ratios: each metacel run against the baseline run (the hand-written controller, or the framework's operator) of the same repetition, the median and (sorted) every run's:\n\n" +
		"| configuration | converge | RSS | CPU | control plane CPU | restart | policy change: every Pod replaced | the load client's burst (the machine's speed) |\n|---|---|---|---|---|---|---|---|\n" +
		strings.Join(lines, "\n") + "\n"
}

// pairedRatio is the median of f's ratio of each of ours to the run of theirs of the same
// repetition (the same index), and (sorted) every one; "–" when theirs has none above 0.
func pairedRatio(ours, theirs []*result, f func(*result) float64) string {
	v := make([]float64, 0, len(ours))
	for i := range ours {
		if h := f(theirs[i]); h > 0 {
			v = append(v, f(ours[i])/h)
		}
	}
	if len(v) == 0 {
		return "–"
	}
	sort.Float64s(v)
	parts := make([]string, len(v))
	for i, x := range v {
		parts[i] = fmt.Sprintf("%.2f", x)
	}
	return fmt.Sprintf("×%.2f (%s)", v[len(v)/2], strings.Join(parts, ", "))
}
