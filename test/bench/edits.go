//go:build e2e

package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
)

// One edit's latency: the load client edits a parent (a MyApp's spec.banner, which its Pod's
// environment holds) and times, from the edit's response, the first write of its child that a
// watch started before the edits sees (a Pod's Recreate: its deletion). Twice: edits one at a
// time (each once the previous one's child write was seen) while the parents sit idle, just after
// a resync (a resync period clear of the next); then edits issued one every -edit-spacing from
// the first sync of the next resync seen, spread over the length of the one before.

// editResult is one phase of edits.
type editResult struct {
	na        string          // why it was not measured ("": it was)
	latencies []time.Duration // each edit's, in the order issued
	stats     latencyStats    // theirs (over runs: the median of each)
	spacing   time.Duration   // between edits issued (0: each once the previous one's child write was seen)
	span      time.Duration   // the first edit to the last child write seen
	// during a resync: the edits issued before it ended; resync: how long it took (its first sync
	// seen to every parent synced, the queue empty, polled every 20 ms), while idle the one before
	during int
	resync time.Duration
	// while idle: whether the last child write was seen before the next resync could begin (the
	// last one's start and 90 % of the period: a resync is jittered)
	clear    bool
	requests counts // the controller's, from the first edit until quiet
}

// latencyStats are percentiles of latencies (nearest rank).
type latencyStats struct {
	n             int
	p50, p99, max time.Duration
}

func statsOf(latencies []time.Duration) latencyStats {
	sorted := slices.Clone(latencies)
	slices.Sort(sorted)
	if len(sorted) == 0 {
		return latencyStats{}
	}
	return latencyStats{n: len(sorted), p50: percentile(sorted, 0.50), p99: percentile(sorted, 0.99), max: sorted[len(sorted)-1]}
}

// percentile is the nearest-rank q-quantile of sorted (not empty): the smallest value at least q
// of the values do not exceed.
func percentile(sorted []time.Duration, q float64) time.Duration {
	i := int(math.Ceil(q*float64(len(sorted)))) - 1
	return sorted[min(max(i, 0), len(sorted)-1)]
}

// editsNA says why ctl's edits of job j are not measured ("": they are).
func editsNA(ctl string, j *job) string {
	switch {
	case j.edit == nil:
		return "n/a: no edit measured for " + j.kind
	case ctl == handwritten:
		return "n/a: it replaces a Pod for its labels only, not for the MyApp's spec"
	case ctl == kopfPython:
		return "n/a: it handles a MyApp once, at its creation, not its edits"
	}
	return ""
}

// editTargets are the parents the two phases edit, n each, spread over names: the idle phase's
// every len/n-th, the resync's halfway between (the same ones when there are no more parents).
func editTargets(names []string, n int) (idle, resync []string) {
	n = min(n, len(names))
	if n <= 0 {
		return nil, nil
	}
	step := len(names) / n
	for i := range n {
		idle = append(idle, names[i*step])
		resync = append(resync, names[(i*step+step/2)%len(names)])
	}
	return idle, resync
}

// editSpacing is the time between the edits issued during a resync: given, or the length of a
// resync (estimate: the one before) spread over the n edits, within [2 ms, 1 s].
func editSpacing(given, estimate time.Duration, n int) time.Duration {
	if given > 0 {
		return given
	}
	if n <= 0 {
		return 0
	}
	return min(max(estimate/time.Duration(n), 2*time.Millisecond), time.Second)
}

// childWrites are the children's first writes a watch sees, delivered to those who await them.
type childWrites struct {
	mu      sync.Mutex
	waiting map[string]chan time.Time
}

// await returns where the next write of the child of that name will be delivered.
func (w *childWrites) await(name string) <-chan time.Time {
	w.mu.Lock()
	defer w.mu.Unlock()
	ch := make(chan time.Time, 1)
	w.waiting[name] = ch
	return ch
}

// seen delivers a write of the child of that name at at, once.
func (w *childWrites) seen(name string, at time.Time) {
	if name == "" {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if ch, ok := w.waiting[name]; ok {
		ch <- at
		delete(w.waiting, name)
	}
}

// watchChildWrites starts an informer of the children of kind in ns (the load client's) that
// sees their writes (childKind.written).
func watchChildWrites(ctx context.Context, cfg *rest.Config, ns string, kind childKind) (*childWrites, error) {
	kube, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	w := &childWrites{waiting: map[string]chan time.Time{}}
	inf := kind.informer(informers.NewSharedInformerFactoryWithOptions(kube, 0, informers.WithNamespace(ns)))
	_, _ = inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		UpdateFunc: func(old, obj any) { w.seen(kind.written(old, obj, false), time.Now()) },
		DeleteFunc: func(obj any) { w.seen(kind.written(nil, obj, true), time.Now()) },
	})
	go inf.RunWithContext(ctx)
	if !cache.WaitForCacheSync(ctx.Done(), inf.HasSynced) {
		return nil, errors.New("load client: the children's cache did not sync")
	}
	return w, nil
}

// edit is one edit issued: when its response came, and when its child's write was seen.
type edit struct {
	at, seen time.Time
}

// latency is the time from the edit's response to its child's write (0 when the watch saw the
// write first).
func (e edit) latency() time.Duration { return max(e.seen.Sub(e.at), 0) }

// runEdits edits targets (value names the phase): one every spacing, or with spacing 0 each once
// the previous one's child write was seen; it returns when every child write was seen.
func (b *bench) runEdits(ctx context.Context, s *stage, p *proc, w *childWrites, targets []string, value string, spacing time.Duration) ([]edit, error) {
	edits := make([]edit, len(targets))
	seen := make([]<-chan time.Time, len(targets))
	start := time.Now()
	for i, parent := range targets {
		seen[i] = w.await(s.job.child.nameOf(parent))
		patch := s.job.edit(fmt.Sprintf("%s-%d", value, i))
		if _, err := s.dyn.Resource(s.job.parent).Namespace(benchNamespace).Patch(ctx, parent, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
			return nil, fmt.Errorf("edit %s: %w", parent, err)
		}
		edits[i].at = time.Now()
		if spacing == 0 {
			if err := b.awaitWrite(ctx, p, parent, seen[i], &edits[i]); err != nil {
				return nil, err
			}
			continue
		}
		if next := start.Add(time.Duration(i+1) * spacing); time.Until(next) > 0 {
			select {
			case <-ctx.Done():
				return nil, ctx.Err()
			case <-time.After(time.Until(next)):
			}
		}
	}
	for i, parent := range targets {
		if spacing != 0 {
			if err := b.awaitWrite(ctx, p, parent, seen[i], &edits[i]); err != nil {
				return nil, err
			}
		}
	}
	return edits, nil
}

// awaitWrite waits for an edit's child write, failing when p exits or after -timeout.
func (b *bench) awaitWrite(ctx context.Context, p *proc, parent string, seen <-chan time.Time, e *edit) error {
	deadline := time.After(b.o.timeout)
	for {
		select {
		case e.seen = <-seen:
			return nil
		case <-ctx.Done():
			return ctx.Err()
		case <-deadline:
			return fmt.Errorf("edit of %s: no child write seen after %s (log: %s)", parent, b.o.timeout, p.log)
		case <-p.exited:
			return p.alive()
		}
	}
}

// resyncWatch follows a controller's resync from its progress while idle (from): begun is closed
// at its first sync (a sync that handled no informer event: metacel's syncs of events count
// apart; the others' idle syncs are resyncs), ended once its syncs have grown by the parents and
// its queue is empty.
type resyncWatch struct {
	began, ended  time.Time
	begun, finish chan struct{}
}

func watchResync(ctx context.Context, p *proc, from progress, parents int) *resyncWatch {
	rw := &resyncWatch{begun: make(chan struct{}), finish: make(chan struct{})}
	go func() {
		for {
			select {
			case <-ctx.Done():
				return
			case <-p.exited:
				return
			case <-time.After(20 * time.Millisecond):
			}
			now, err := p.progress(ctx)
			if err != nil {
				continue
			}
			if rw.began.IsZero() && resyncBegun(from, now) {
				rw.began = time.Now()
				close(rw.begun)
			}
			if !rw.began.IsZero() && now.depth == 0 && now.syncs-from.syncs >= float64(parents) {
				rw.ended = time.Now()
				close(rw.finish)
				return
			}
		}
	}()
	return rw
}

// resyncBegun says whether a controller quiet at from has begun a resync: it has synced without
// an informer event.
func resyncBegun(from, now progress) bool {
	return now.syncs-now.events > from.syncs-from.events
}

// wait waits for one of rw's channels, failing after d or when p exits.
func (rw *resyncWatch) wait(ctx context.Context, p *proc, ch <-chan struct{}, d time.Duration, what string) error {
	select {
	case <-ch:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(d):
		return fmt.Errorf("resync: not %s after %s (log: %s)", what, d, p.log)
	case <-p.exited:
		return p.alive()
	}
}

// measureEdits measures the edits while idle and then during a resync (unless skipped), each of
// -edits parents, into r: it waits for a resync to end (its length, measured, spaces the edits
// during the next), edits one parent at a time right after it (a resync period clear of the
// next), and once the next resync has begun edits one parent every spacing.
func (b *bench) measureEdits(ctx context.Context, s *stage, p *proc, r *result) error {
	idleOn, resyncOn := !b.skipped(phaseEditsIdle), !b.skipped(phaseEditsResync)
	n := min(b.o.edits, b.o.parents)
	if n <= 0 || (!idleOn && !resyncOn) {
		return nil
	}
	if why := editsNA(p.kind, s.job); why != "" {
		r.editsIdle.na, r.editsResync.na = why, why
		return nil
	}
	watchCtx, stop := context.WithCancel(ctx)
	defer stop()
	w, err := watchChildWrites(watchCtx, s.load, benchNamespace, s.job.child)
	if err != nil {
		return err
	}
	idle, resync := editTargets(s.names, n)
	last, err := b.nextResync(ctx, s, p, true)
	if err != nil {
		return fmt.Errorf("the resync before the edits: %w", err)
	}
	if idleOn {
		if r.editsIdle, err = b.editsWhileIdle(ctx, s, p, w, idle, last); err != nil {
			return fmt.Errorf("edits while idle: %w", err)
		}
	}
	if resyncOn {
		spacing := editSpacing(b.o.editSpacing, last.ended.Sub(last.began), n)
		if idleOn {
			spacing = max(spacing, r.editsIdle.stats.p99) // one edit's write seen before the next, but for the resync
		}
		if r.editsResync, err = b.editsDuringResync(ctx, s, p, w, resync, spacing); err != nil {
			return fmt.Errorf("edits during a resync: %w", err)
		}
	}
	return nil
}

// resyncWait bounds the wait for a resync to begin: two periods (jittered by up to 10 %) and a
// little.
func (b *bench) resyncWait() time.Duration { return 2*b.o.resync + 30*time.Second }

// nextResync waits, the controller quiet, for its next resync to begin, and with whole until it
// has ended; it returns the resync followed, whose watch runs until it ends or ctx is done.
func (b *bench) nextResync(ctx context.Context, s *stage, p *proc, whole bool) (*resyncWatch, error) {
	if _, err := b.waitQuiet(ctx, s.cl, s.own, work, p); err != nil {
		return nil, err
	}
	from, err := p.progress(ctx)
	if err != nil {
		return nil, err
	}
	rw := watchResync(ctx, p, from, b.o.parents)
	if err := rw.wait(ctx, p, rw.begun, b.resyncWait(), "begun"); err != nil {
		return nil, err
	}
	if whole {
		return rw, rw.wait(ctx, p, rw.finish, b.o.timeout, "ended")
	}
	return rw, nil
}

// editsWhileIdle edits targets one at a time, just after the resync last (quiet first): a resync
// period clear of the next.
func (b *bench) editsWhileIdle(ctx context.Context, s *stage, p *proc, w *childWrites, targets []string, last *resyncWatch) (editResult, error) {
	var res editResult
	w0, err := b.waitQuiet(ctx, s.cl, s.own, work, p)
	if err != nil {
		return res, err
	}
	edits, err := b.runEdits(ctx, s, p, w, targets, "idle", 0)
	if err != nil {
		return res, err
	}
	res.latencies, res.span = latencies(edits), spanOf(edits)
	res.stats = statsOf(res.latencies)
	res.resync = last.ended.Sub(last.began)
	res.clear = clearOfResync(last.began, edits[len(edits)-1].seen, b.o.resync)
	if !res.clear {
		logf("  warning: the edits while idle outlasted a resync period from the last resync; the next may have overlapped them")
	}
	w1, err := b.waitQuiet(ctx, s.cl, s.own, work, p)
	if err != nil {
		return res, err
	}
	res.requests, _, err = s.cl.attribute(w0, w1)
	return res, err
}

// editsDuringResync waits, the controller quiet, for its next resync to begin, and then edits
// targets one every spacing.
func (b *bench) editsDuringResync(ctx context.Context, s *stage, p *proc, w *childWrites, targets []string, spacing time.Duration) (editResult, error) {
	res := editResult{spacing: spacing}
	watchCtx, stop := context.WithCancel(ctx)
	defer stop()
	rw, err := b.nextResync(watchCtx, s, p, false)
	if err != nil {
		return res, err
	}
	w0, err := s.cl.window(ctx, s.own, p)
	if err != nil {
		return res, err
	}
	edits, err := b.runEdits(ctx, s, p, w, targets, "resync", spacing)
	if err != nil {
		return res, err
	}
	if err := rw.wait(ctx, p, rw.finish, b.o.timeout, "ended"); err != nil {
		return res, err
	}
	res.latencies, res.span = latencies(edits), spanOf(edits)
	res.stats = statsOf(res.latencies)
	res.resync = rw.ended.Sub(rw.began)
	for _, e := range edits {
		if e.at.Before(rw.ended) {
			res.during++
		}
	}
	w1, err := b.waitQuiet(ctx, s.cl, s.own, work, p)
	if err != nil {
		return res, err
	}
	res.requests, _, err = s.cl.attribute(w0, w1)
	return res, err
}

// clearOfResync says whether what ended at end was clear of the resync after the one that began
// at began, with a period jittered by up to 10 % either way.
func clearOfResync(began, end time.Time, period time.Duration) bool {
	return end.Before(began.Add(period * 9 / 10))
}

func latencies(edits []edit) []time.Duration {
	out := make([]time.Duration, len(edits))
	for i, e := range edits {
		out[i] = e.latency()
	}
	return out
}

// spanOf is the time from the first edit's response to the last child write seen.
func spanOf(edits []edit) time.Duration {
	if len(edits) == 0 {
		return 0
	}
	last := edits[0].seen
	for _, e := range edits {
		if e.seen.After(last) {
			last = e.seen
		}
	}
	return last.Sub(edits[0].at)
}

// bannerPatch is the merge patch that sets a MyApp's spec.banner.
func bannerPatch(banner string) []byte {
	raw, _ := json.Marshal(map[string]any{"spec": map[string]any{"banner": banner}})
	return raw
}
