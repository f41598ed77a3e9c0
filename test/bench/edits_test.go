//go:build e2e

package main

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	"k8s.io/client-go/tools/cache"
)

func ms(n int) time.Duration { return time.Duration(n) * time.Millisecond }

// Percentiles are nearest-rank: p99 of 100 edits is the 99th fastest, not an interpolation.
func TestLatencyPercentilesAreNearestRank(t *testing.T) {
	hundred := make([]time.Duration, 100)
	for i := range hundred {
		hundred[i] = ms(100 - i) // 100 ms .. 1 ms, unsorted
	}
	tests := []struct {
		name      string
		latencies []time.Duration
		want      latencyStats
	}{
		{"none", nil, latencyStats{}},
		{"one is every percentile", []time.Duration{ms(7)}, latencyStats{n: 1, p50: ms(7), p99: ms(7), max: ms(7)}},
		{"an even count's median is the lower middle", []time.Duration{ms(4), ms(1), ms(3), ms(2)}, latencyStats{n: 4, p50: ms(2), p99: ms(4), max: ms(4)}},
		{"a hundred", hundred, latencyStats{n: 100, p50: ms(50), p99: ms(99), max: ms(100)}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := slices.Clone(tt.latencies)
			if got := statsOf(tt.latencies); got != tt.want {
				t.Errorf("statsOf = %+v, want %+v", got, tt.want)
			}
			if !slices.Equal(in, tt.latencies) {
				t.Error("the latencies were reordered")
			}
		})
	}
}

// The two phases edit n parents each, spread over all, different ones when there are enough.
func TestEditTargetsAreSpreadOverTheParents(t *testing.T) {
	names := make([]string, 1000)
	for i := range names {
		names[i] = "app-" + string(rune('a'+i%26)) + strings.Repeat("x", i/26)
	}
	idle, resync := editTargets(names, 100)
	if len(idle) != 100 || len(resync) != 100 || idle[0] != names[0] || idle[1] != names[10] || resync[0] != names[5] || idle[99] != names[990] {
		t.Fatalf("idle %v..., resync %v...", idle[:2], resync[:1])
	}
	for _, n := range resync {
		if slices.Contains(idle, n) {
			t.Errorf("%s is edited in both phases", n)
		}
	}
	idle, resync = editTargets(names[:10], 100)
	if len(idle) != 10 || len(resync) != 10 {
		t.Errorf("more edits than parents: %d, %d", len(idle), len(resync))
	}
	if idle, resync = editTargets(names, 0); idle != nil || resync != nil {
		t.Error("no edits, and targets")
	}
}

func TestEditsDuringAResyncAreSpreadOverItsExpectedLength(t *testing.T) {
	tests := []struct {
		name     string
		given    time.Duration
		estimate time.Duration
		n        int
		want     time.Duration
	}{
		{"given", ms(30), time.Second, 100, ms(30)},
		{"spread over the estimate", 0, 3 * time.Second, 100, ms(30)},
		{"at least 2 ms", 0, ms(50), 100, ms(2)},
		{"at most 1 s", 0, 1000 * time.Second, 100, time.Second},
		{"no edits", 0, time.Second, 0, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := editSpacing(tt.given, tt.estimate, tt.n); got != tt.want {
				t.Errorf("editSpacing = %v, want %v", got, tt.want)
			}
		})
	}
}

// A Pod's first write after its MyApp's edit is its deletion: its deletion event, or on a node
// the update that sets its deletionTimestamp; no other update counts.
func TestAPodsFirstWriteIsItsDeletion(t *testing.T) {
	live := podFor("app-1-pod", nil, "", "", false)
	deleting := podFor("app-1-pod", nil, "", "", true)
	running := podFor("app-1-pod", nil, "n", "Running", false)
	tests := []struct {
		name     string
		old, obj any
		deleted  bool
		want     string
	}{
		{"deleted", nil, live, true, "app-1-pod"},
		{"deleted, its last state unknown", nil, cache.DeletedFinalStateUnknown{Obj: live}, true, "app-1-pod"},
		{"its deletionTimestamp set", live, deleting, false, "app-1-pod"},
		{"already being deleted", deleting, deleting, false, ""},
		{"bound and running", live, running, false, ""},
		{"not a Pod", nil, "x", true, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := podWritten(tt.old, tt.obj, tt.deleted); got != tt.want {
				t.Errorf("podWritten = %q, want %q", got, tt.want)
			}
		})
	}
}

// A write seen before the edit's response counts as 0; the span runs from the first edit's
// response to the last write seen.
func TestAnEditsLatencyRunsFromItsResponseToItsChildsWrite(t *testing.T) {
	t0 := time.Now()
	edits := []edit{{at: t0, seen: t0.Add(ms(40))}, {at: t0.Add(ms(50)), seen: t0.Add(ms(45))}, {at: t0.Add(ms(60)), seen: t0.Add(ms(200))}}
	if got := latencies(edits); !slices.Equal(got, []time.Duration{ms(40), 0, ms(140)}) {
		t.Errorf("latencies %v", got)
	}
	if got := spanOf(edits); got != ms(200) {
		t.Errorf("span %v", got)
	}
	if spanOf(nil) != 0 {
		t.Error("the span of no edits")
	}
}

// A resync has begun once the controller syncs without an informer event (metacel's syncs of an
// event are counted apart; the others count none).
func TestAResyncBeginsWithASyncOfNoEvent(t *testing.T) {
	from := progress{syncs: 100, events: 60}
	if resyncBegun(from, progress{syncs: 105, events: 65}) {
		t.Error("syncs of events taken for a resync")
	}
	if !resyncBegun(from, progress{syncs: 106, events: 65}) {
		t.Error("a sync of no event not taken for a resync")
	}
	if !resyncBegun(progress{syncs: 10}, progress{syncs: 11}) {
		t.Error("a baseline's idle sync not taken for a resync")
	}
	began := time.Now()
	if !clearOfResync(began, began.Add(26*time.Second), 30*time.Second) || clearOfResync(began, began.Add(28*time.Second), 30*time.Second) {
		t.Error("clear of the next resync: before 90 % of the period, not after")
	}
}

// Edits are measured for the controllers that replace a Pod when its MyApp's spec changes.
func TestEditsAreMeasuredWhereAnEditWritesTheChild(t *testing.T) {
	for _, tt := range []struct {
		ctl      string
		j        *job
		measured bool
	}{
		{metacel, myAppJob, true},
		{controllerRuntime, myAppJob, true},
		{handwritten, myAppJob, false},
		{kopfPython, myAppJob, false},
		{metacel, memcachedJob, false},
	} {
		if got := editsNA(tt.ctl, tt.j) == ""; got != tt.measured {
			t.Errorf("%s, %s: measured %v, want %v", tt.ctl, tt.j.name, got, tt.measured)
		}
	}
	var patch map[string]map[string]string
	if err := json.Unmarshal(myAppJob.edit(`idle-"7"`), &patch); err != nil || patch["spec"]["banner"] != `idle-"7"` {
		t.Errorf("the edit's patch: %v (%v)", patch, err)
	}
}

// The table sets metacel beside its baseline: times with their ratio, n/a with its reason.
func TestTheSteadyTableSaysWhatWasNotMeasured(t *testing.T) {
	writes := counts{{Verb: "DELETE", Resource: "pods"}: 100, {Verb: "POST", Resource: "pods"}: 100, {Verb: "PATCH", Group: "demo.rtfm.co.ua", Resource: "myapps", Subresource: "status"}: 100}
	edits := func(p50, p99, max int) editResult {
		return editResult{stats: latencyStats{n: 100, p50: ms(p50), p99: ms(p99), max: ms(max)}, requests: writes, clear: true}
	}
	during := edits(40, 300, 400)
	during.during, during.resync, during.spacing = 80, 2*time.Second, ms(20)
	results := map[string][]*result{
		controllerRuntime + "/myapp-controller-runtime": {{noop: noopResult{took: 2 * time.Second, syncs: 1000}, editsIdle: edits(20, 40, 50), editsResync: during}},
		metacel + "/myapp-controller-runtime":           {{noop: noopResult{took: time.Second, syncs: 1000}, editsIdle: edits(10, 40, 100), editsResync: during}},
		kopfPython + "/myapp-kopf":                      {{noop: noopResult{na: noopNA(kopfPython)}, editsIdle: editResult{na: "n/a: x"}, editsResync: editResult{na: "n/a: x"}}},
		metacel + "/myapp-kopf":                         {{noop: noopResult{took: time.Second, syncs: 1000}}},
	}
	got := steadyTable([]benchConfig{{name: "myapp-controller-runtime", baseline: controllerRuntime}, {name: "myapp-kopf", baseline: kopfPython}}, results)
	for _, want := range []string{
		"| myapp-controller-runtime | controller-runtime | 2.00 | 0 | 1000 | 20 / 40 / 50 | 3.0 | 40 / 300 / 400 | 80 of 100, 2.00, 20 |",
		"| myapp-controller-runtime | metacel | 1.00 (×0.5) | 0 | 1000 | 10 (×0.5) / 40 (×1.0) / 100 (×2.0) | 3.0 | 40 (×1.0) / 300 (×1.0) / 400 (×1.0) | 80 of 100, 2.00, 20 |",
		"| myapp-kopf | Kopf-style Python | " + noopNA(kopfPython) + " | – | – | n/a: x | – | n/a: x | – |",
		"| myapp-kopf | metacel | 1.00 | 0 | 1000 | – | – | – | – |",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("no row %q in\n%s", want, got)
		}
	}
	if steadyTable([]benchConfig{{name: "equal"}}, results) != "" {
		t.Error("a table with nothing measured in it")
	}
}
