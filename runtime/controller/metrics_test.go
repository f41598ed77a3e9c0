package controller

import (
	"errors"
	goruntime "runtime"
	"strconv"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	clienttesting "k8s.io/client-go/testing"

	"metacel.dev/metacel/runtime/contract"
)

// A sync is observed in each histogram: the reconcile time as controller-runtime names it, the
// duration by outcome, and the latency from the event that asked for it, by the event's source.
func TestASyncIsObservedInEachHistogram(t *testing.T) {
	for _, tc := range []struct {
		name   string
		event  func(h *harness, parent *unstructured.Unstructured)
		source string
	}{
		{"a parent's event", func(h *harness, parent *unstructured.Unstructured) {
			h.c.parentHandler().OnUpdate(parent, parent)
		}, eventOfParent},
		{"a child's event", func(h *harness, parent *unstructured.Unstructured) {
			child := &unstructured.Unstructured{}
			child.SetAPIVersion("v1")
			child.SetKind("Secret")
			child.SetNamespace("ns")
			child.SetName("child")
			child.SetLabels(map[string]string{contract.LabelChildPolicyName: h.c.Name(), contract.LabelParentUID: string(parent.GetUID())})
			h.c.childHandler().OnAdd(child, false)
		}, eventOfChild},
		{"a parent of the informer's first list (a start, a new policy version)", func(h *harness, parent *unstructured.Unstructured) {
			h.c.parentHandler().OnAdd(parent, true) // the bench counts these to see a new version decide every parent
		}, eventOfParent},
		{"a related object's event", func(h *harness, parent *unstructured.Unstructured) {
			h.c.related.enqueue(parentKey(parent))
		}, eventOfRelated},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, copyToSecret())
			reg := prometheus.NewRegistry()
			h.c.deps.Metrics = NewMetrics(reg)
			parent := &unstructured.Unstructured{}
			parent.SetAPIVersion("v1")
			parent.SetKind("ConfigMap")
			parent.SetNamespace("ns")
			parent.SetName("p")
			parent.SetUID(types.UID("uid-p"))
			parent.Object["data"] = map[string]any{"a": "Opaque"}
			h.cacheParent(t, parent)
			h.react("create", "secrets", func(a clienttesting.Action) (bool, runtime.Object, error) {
				return true, a.(clienttesting.CreateAction).GetObject().(*unstructured.Unstructured), nil
			})
			tc.event(h, parent)
			if !h.c.processNextWorkItem(t.Context()) {
				t.Fatal("the queue shut down")
			}
			want := map[string]map[string]string{
				"controller_runtime_reconcile_time_seconds": {"controller": h.c.Name()},
				"metacel_sync_duration_seconds":             {"policy": h.c.Name(), "outcome": "success"},
				"metacel_sync_event_latency_seconds":        {"policy": h.c.Name(), "source": tc.source},
			}
			for name, labels := range want {
				if got := sampleCount(t, reg, name, labels); got != 1 {
					t.Errorf("%s%v: %d observations, want 1", name, labels, got)
				}
			}
		})
	}
}

// A sync that no event asked for (a retry, a resync) is not observed as an event's latency, and
// of two events before a sync only the first counts.
func TestOnlyTheFirstEventASyncHandlesIsObserved(t *testing.T) {
	h := newHarness(t, copyToSecret())
	reg := prometheus.NewRegistry()
	h.c.deps.Metrics = NewMetrics(reg)
	gone := &unstructured.Unstructured{}
	gone.SetAPIVersion("v1")
	gone.SetKind("ConfigMap")
	gone.SetNamespace("ns")
	gone.SetName("gone")
	h.c.parentHandler().OnUpdate(gone, gone)
	h.c.related.enqueue(parentKey(gone))
	h.c.processNextWorkItem(t.Context())
	h.c.queue.Add(parentKey(gone)) // a resync
	h.c.processNextWorkItem(t.Context())
	if got := sampleCount(t, reg, "metacel_sync_event_latency_seconds", map[string]string{"source": eventOfParent}); got != 1 {
		t.Errorf("parent events observed: %d, want 1", got)
	}
	if got := sampleCount(t, reg, "metacel_sync_event_latency_seconds", map[string]string{"source": eventOfRelated}); got != 0 {
		t.Errorf("related events observed: %d, want 0 (the sync handled the parent's first)", got)
	}
	if got := sampleCount(t, reg, "controller_runtime_reconcile_time_seconds", nil); got != 2 {
		t.Errorf("syncs observed: %d, want 2", got)
	}
}

func TestASyncsOutcomeIsNamedAsItIsHandled(t *testing.T) {
	fenced := apierrors.NewForbidden(schema.GroupResource{Resource: "secrets"}, "s", errors.New("fenced"))
	fenced.ErrStatus.Reason = reasonWriteFenced
	for _, tc := range []struct {
		name string
		err  error
		want string
	}{
		{"no error", nil, "success"},
		{"an error retried with backoff", errors.New("boom"), "error"},
		{"a terminal error", terminal(errors.New("invalid")), "terminal"},
		{"a child conflict", &syncError{reason: contract.ReasonChildConflict, err: errors.New("taken")}, "conflict"},
		{"a fenced write", fenced, "fenced"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := outcomeOf(tc.err); got != tc.want {
				t.Errorf("outcomeOf(%v) = %q, want %q", tc.err, got, tc.want)
			}
		})
	}
}

// sampleCount sums the observations of the histogram name over its series that carry labels.
func sampleCount(t *testing.T, reg *prometheus.Registry, name string, labels map[string]string) uint64 {
	t.Helper()
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var n uint64
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
		for _, m := range f.GetMetric() {
			if hasLabels(m, labels) {
				n += m.GetHistogram().GetSampleCount()
			}
		}
	}
	return n
}

func hasLabels(m *dto.Metric, want map[string]string) bool {
	have := map[string]string{}
	for _, l := range m.GetLabel() {
		have[l.GetName()] = l.GetValue()
	}
	for k, v := range want {
		if have[k] != v {
			return false
		}
	}
	return true
}

// BenchmarkEventToSync is a parent's event queued and handled by a worker: the queue, the
// metrics and the sync of a parent the cache no longer holds (the shortest sync), so that what
// the queue and its metrics cost is not lost in a render.
func BenchmarkEventToSync(b *testing.B) {
	h := newHarness(b, copyToSecret())
	gone := &unstructured.Unstructured{}
	gone.SetAPIVersion("v1")
	gone.SetKind("ConfigMap")
	gone.SetNamespace("ns")
	gone.SetName("gone")
	handler := h.c.parentHandler()
	ctx := b.Context()
	b.ReportAllocs()
	for b.Loop() {
		handler.OnUpdate(gone, gone)
		if !h.c.processNextWorkItem(ctx) {
			b.Fatal("the queue shut down")
		}
	}
}

// The first event of every parent at a start waits in pendingEvents until its sync: once they are
// all taken, the map's room for them goes back to the heap (a Go map never shrinks).
func TestPendingEventsTakenKeepNothingOfTheirPeak(t *testing.T) {
	const n = 100_000
	keys := make([]string, n)
	for i := range keys {
		keys[i] = "ns/p-" + strconv.Itoa(i)
	}
	var p pendingEvents
	before := heapInUse()
	at := time.Now()
	for _, key := range keys {
		p.note(key, eventOfParent, at)
	}
	for _, key := range keys {
		if p.take(key).at.IsZero() {
			t.Fatalf("no event waits for %s", key)
		}
	}
	if kept := heapInUse() - before; kept > 256<<10 {
		t.Errorf("every event taken after %d, pendingEvents keeps %d KB, want at most 256", n, kept>>10)
	}
	goruntime.KeepAlive(keys)
	goruntime.KeepAlive(&p)
}

// heapInUse is the heap in use after a collection.
func heapInUse() int64 {
	goruntime.GC()
	var m goruntime.MemStats
	goruntime.ReadMemStats(&m)
	return int64(m.HeapAlloc)
}

// A pending event is held as the time since the first event and a source's number: it is taken
// back with its time and source as noted, the first of each key's events; a source of no name
// known reads back as unknown.
func TestAPendingEventIsTakenAsItWasNoted(t *testing.T) {
	var p pendingEvents
	first := time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC)
	for _, tt := range []struct {
		key, source, want string
		after             time.Duration
	}{
		{"ns/a", eventOfParent, eventOfParent, 0},
		{"ns/b", eventOfChild, eventOfChild, 1500 * time.Millisecond},
		{"ns/c", eventOfRelated, eventOfRelated, 90 * time.Minute},
		{"ns/d", "a source of no name here", "unknown", time.Hour},
	} {
		at := first.Add(tt.after)
		p.note(tt.key, tt.source, at)
		p.note(tt.key, eventOfParent, at.Add(time.Second)) // a later event of the key: not kept
		if got := p.take(tt.key); !got.at.Equal(at) || got.source != tt.want {
			t.Errorf("%s: taken %v from %q, want %v from %q", tt.key, got.at, got.source, at, tt.want)
		}
		if got := p.take(tt.key); !got.at.IsZero() {
			t.Errorf("%s: taken twice", tt.key)
		}
	}
}
