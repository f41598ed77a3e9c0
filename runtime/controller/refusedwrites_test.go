package controller

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/client-go/util/workqueue"

	"metacel.dev/metacel/runtime/contract"
)

// copyPolicy copies the parent's data into a Secret.
var copyPolicy = secretsPolicy(secretChild(`stringData: "${parent.data}"`))

func TestAWriteTheAPIServerCannotAcceptIsNotRetried(t *testing.T) {
	etcdTooLarge := apierrors.NewInternalError(errors.New("etcdserver: request is too large"))
	tests := []struct {
		name       string
		refusal    error
		wantReason string // in the error, naming the cause
		wantRetry  bool
	}{
		{"etcd's request limit", etcdTooLarge, "larger than the API server can store (etcd's request limit, 1.5 MiB by default)", false},
		{"the request body limit", apierrors.NewRequestEntityTooLargeError("limit is 3145728"), "larger than the API server can store", false},
		{"a value the schema refuses", apierrors.NewInvalid(schema.GroupKind{Kind: "Secret"}, "big-copy", nil), "is invalid", false},
		{"a passing server error is retried", apierrors.NewInternalError(errors.New("connection reset")), "connection reset", true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, copyPolicy)
			parent := objectFrom(t, `{apiVersion: v1, kind: ConfigMap, metadata: {name: big, namespace: ns, uid: p-1, resourceVersion: "1"}, data: {a: "x"}}`)
			h.cacheParent(t, parent)
			h.react("create", "secrets", func(clienttesting.Action) (bool, runtime.Object, error) { return true, nil, tc.refusal })

			err := h.c.syncer.sync(t.Context(), "ns/big")
			if gotRetry := !isTerminal(err); gotRetry != tc.wantRetry {
				t.Fatalf("sync: %v; retried %v, want %v", err, gotRetry, tc.wantRetry)
			}
			if !strings.Contains(err.Error(), tc.wantReason) {
				t.Errorf("error %q does not say %q", err, tc.wantReason)
			}
			// the next syncs (a resync, a child event) of the same parent
			for range 3 {
				_ = h.c.syncer.sync(t.Context(), "ns/big")
			}
			want := 4
			if !tc.wantRetry {
				want = 1
			}
			if n := countOf(h.writes(), "create secrets"); n != want {
				t.Errorf("%d writes of the child, want %d", n, want)
			}
			if tc.wantRetry {
				return
			}
			// the parent changes what it renders: it is sent again
			changed := parent.DeepCopy()
			_ = unstructured.SetNestedField(changed.Object, "y", "data", "a")
			changed.SetResourceVersion("2")
			h.cacheParent(t, changed)
			_ = h.c.syncer.sync(t.Context(), "ns/big")
			if n := countOf(h.writes(), "create secrets"); n != 2 {
				t.Errorf("%d writes after the parent changed, want 2", n)
			}
		})
	}
}

func TestAnObjectMadeByHandWithAParentsLabelsAddsNoFinalizer(t *testing.T) {
	h := newHarness(t, copyPolicy)
	parent := objectFrom(t, `{apiVersion: v1, kind: ConfigMap, metadata: {name: p, namespace: ns, uid: p-1, resourceVersion: "1"}, data: {a: "x"}}`)
	h.cacheParent(t, parent)
	// made by hand (kubectl create): metacel's labels, no ownerReference, no metacel apply
	h.cacheChild(t, objectFrom(t, `{apiVersion: v1, kind: Secret, metadata: {name: p-copy, namespace: ns, uid: s-1,
  labels: {app.kubernetes.io/managed-by: metacel, metacel.dev/policy: copy, metacel.dev/parent-uid: p-1, metacel.dev/child-id: copy},
  managedFields: [{manager: kubectl-create, operation: Update, fieldsType: FieldsV1, fieldsV1: {"f:metadata": {}}}]}}`))
	_ = h.c.syncer.sync(t.Context(), "ns/p")
	if slices.Contains(h.writes(), "patch configmaps") {
		t.Errorf("writes %v: the parent got a finalizer for an object metacel never applied", h.writes())
	}
}

func countOf(list []string, s string) int {
	n := 0
	for _, x := range list {
		if x == s {
			n++
		}
	}
	return n
}

func TestASyncCancelledByAStoppingControllerIsNoError(t *testing.T) {
	h := newHarness(t, copyPolicy)
	h.cacheParent(t, objectFrom(t, `{apiVersion: v1, kind: ConfigMap, metadata: {name: p, namespace: ns, uid: p-1}, data: {a: "x"}}`))
	ctx, stop := context.WithCancel(t.Context())
	h.react("create", "secrets", func(clienttesting.Action) (bool, runtime.Object, error) {
		stop() // a reload swaps the controller while it writes
		return true, nil, fmt.Errorf("client rate limiter Wait returned an error: %w", context.Canceled)
	})
	h.c.queue.Add("ns/p")
	h.c.processNextWorkItem(ctx)
	if n := testutil.ToFloat64(h.c.deps.Metrics.errors.WithLabelValues("copy")); n != 0 {
		t.Errorf("controller_runtime_reconcile_errors_total = %v, want 0", n)
	}
	if n := h.c.queue.NumRequeues("ns/p"); n != 0 {
		t.Errorf("requeued %d times, want 0: its successor syncs it", n)
	}
}

func TestAnObjectMadeByHandIsNeverTakenOver(t *testing.T) {
	secrets := schema.GroupVersionResource{Version: "v1", Resource: "secrets"}
	tests := []struct {
		name   string
		labels string
	}{
		{"with a parent's labels", `{app.kubernetes.io/managed-by: metacel, metacel.dev/policy: copy, metacel.dev/parent-uid: p-1, metacel.dev/child-id: copy}`},
		{"with only the parent-uid label", `{metacel.dev/parent-uid: p-1}`},
		{"without metacel's labels", `{}`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, copyPolicy)
			h.cacheParent(t, objectFrom(t, `{apiVersion: v1, kind: ConfigMap, metadata: {name: p, namespace: ns, uid: p-1}, data: {a: "x"}}`))
			byHand := objectFrom(t, `{apiVersion: v1, kind: Secret, metadata: {name: p-copy, namespace: ns, uid: s-1, labels: `+tc.labels+`,
  managedFields: [{manager: kubectl-create, operation: Update, fieldsType: FieldsV1, fieldsV1: {"f:metadata": {}}}]}}`)
			if err := h.client.Tracker().Create(secrets, byHand, "ns"); err != nil {
				t.Fatal(err)
			}
			if byHand.GetLabels()[contract.LabelManagedBy] != "" {
				h.cacheChild(t, byHand)
			}
			err := h.c.syncer.sync(t.Context(), "ns/p")
			if !isConflict(err) {
				t.Errorf("sync: %v, want a ChildConflict", err)
			}
			if w := h.writes(); slices.ContainsFunc(w, func(v string) bool { return v != "create secrets" }) {
				t.Errorf("writes %v: an object metacel did not apply was written (only a create, refused as it exists, may be tried)", w)
			}
		})
	}
}

func TestAPanickingSyncIsRecoveredAndRetried(t *testing.T) {
	h := newHarness(t, copyPolicy)
	h.cacheParent(t, objectFrom(t, `{apiVersion: v1, kind: ConfigMap, metadata: {name: p, namespace: ns, uid: p-1}, data: {a: "x"}}`))
	h.react("create", "secrets", func(clienttesting.Action) (bool, runtime.Object, error) { panic("a bug") })
	h.c.queue.Add("ns/p")
	if !h.c.processNextWorkItem(t.Context()) {
		t.Fatal("the worker stopped")
	}
	if n := testutil.ToFloat64(h.c.deps.Metrics.panics.WithLabelValues("copy")); n != 1 {
		t.Errorf("metacel_sync_panics_total = %v, want 1", n)
	}
	if n := h.c.queue.NumRequeues("ns/p"); n != 1 {
		t.Errorf("requeued %d times, want 1 (with backoff)", n)
	}
}

func TestAReplacedControllerLeavesNoQueueDepth(t *testing.T) {
	depths := &queueDepths{byName: map[string]*queueDepth{}}
	workqueue.SetProvider(depths) // before the queue is made: it takes its metrics from the provider
	h := newHarness(t, strings.Replace(copyPolicy, "name: copy}", "name: drained}", 1))
	for _, k := range []string{"ns/a", "ns/b", "ns/c"} {
		h.c.queue.Add(k)
	}
	h.c.release()
	if d := depths.of("drained"); d != 0 {
		t.Errorf("workqueue depth of drained = %v after release, want 0", d)
	}
}

// queueDepths is a workqueue metrics provider that keeps each queue's depth (the process's own,
// with the other metrics, is package operator's).
type queueDepths struct {
	workqueue.MetricsProvider
	mu     sync.Mutex
	byName map[string]*queueDepth
}

type queueDepth struct {
	mu sync.Mutex
	n  float64
}

func (d *queueDepth) Inc()          { d.mu.Lock(); d.n++; d.mu.Unlock() }
func (d *queueDepth) Dec()          { d.mu.Lock(); d.n--; d.mu.Unlock() }
func (d *queueDepth) Set(v float64) { d.mu.Lock(); d.n = v; d.mu.Unlock() }

func (q *queueDepths) NewDepthMetric(name string) workqueue.GaugeMetric {
	q.mu.Lock()
	defer q.mu.Unlock()
	d := &queueDepth{}
	q.byName[name] = d
	return d
}

func (q *queueDepths) of(name string) float64 {
	q.mu.Lock()
	d := q.byName[name]
	q.mu.Unlock()
	if d == nil {
		return -1
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.n
}

func (q *queueDepths) NewAddsMetric(string) workqueue.CounterMetric { return noMetric{} }
func (q *queueDepths) NewLatencyMetric(string) workqueue.HistogramMetric {
	return noMetric{}
}
func (q *queueDepths) NewWorkDurationMetric(string) workqueue.HistogramMetric {
	return noMetric{}
}
func (q *queueDepths) NewUnfinishedWorkSecondsMetric(string) workqueue.SettableGaugeMetric {
	return noMetric{}
}
func (q *queueDepths) NewLongestRunningProcessorSecondsMetric(string) workqueue.SettableGaugeMetric {
	return noMetric{}
}
func (q *queueDepths) NewRetriesMetric(string) workqueue.CounterMetric { return noMetric{} }

type noMetric struct{}

func (noMetric) Inc()            {}
func (noMetric) Set(float64)     {}
func (noMetric) Observe(float64) {}

func TestWhatIsRememberedOfAParentGoesWithIt(t *testing.T) {
	h := newHarness(t, copyPolicy)
	parent := objectFrom(t, `{apiVersion: v1, kind: ConfigMap, metadata: {name: p, namespace: ns, uid: p-1}, data: {a: "x"}}`)
	h.cacheParent(t, parent)
	h.react("create", "secrets", func(clienttesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewInvalid(schema.GroupKind{Kind: "Secret"}, "p-copy", nil)
	})
	_ = h.c.syncer.sync(t.Context(), "ns/p")
	if st := h.c.states.byKey["ns/p"]; st == nil || st.seldomRead().conditions == "" || len(st.seldomRead().refused) != 1 {
		t.Fatalf("remembered of the parent %+v, want its conditions and one refusal", st)
	}
	if err := h.c.caches.parents.Whole().GetIndexer().Delete(parent); err != nil {
		t.Fatal(err)
	}
	_ = h.c.syncer.sync(t.Context(), "ns/p")
	if n := len(h.c.states.byKey); n != 0 {
		t.Errorf("remembered %d parents after the parent was deleted, want none", n)
	}
}

func TestContentHashIdentifiesWhatWouldBeSent(t *testing.T) {
	object := func(annotation string, data map[string]any) *unstructured.Unstructured {
		meta := map[string]any{"name": "s"}
		if annotation != "" {
			meta["annotations"] = map[string]any{contract.AnnotationContentHash: annotation}
		}
		return &unstructured.Unstructured{Object: map[string]any{"kind": "Secret", "metadata": meta, "data": data}}
	}
	tests := []struct {
		name     string
		a, b     *unstructured.Unstructured
		wantSame bool
	}{
		{"a rendered child is its content hash, which covers the rest", object("0123456789abcdef", map[string]any{"k": "v"}), object("0123456789abcdef", map[string]any{"k": "v"}), true},
		{"rendered children of different content hashes differ", object("0123456789abcdef", map[string]any{"k": "v"}), object("fedcba9876543210", map[string]any{"k": "v"}), false},
		{"an object without one is its JSON: the same content is the same", object("", map[string]any{"k": "v", "l": "w"}), object("", map[string]any{"l": "w", "k": "v"}), true},
		{"an object without one is its JSON: another value differs", object("", map[string]any{"k": "v"}), object("", map[string]any{"k": "w"}), false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			a, b := contentHash(tc.a), contentHash(tc.b)
			if a == "" || (a == b) != tc.wantSame {
				t.Errorf("contentHash: %q and %q, want the same: %v", a, b, tc.wantSame)
			}
		})
	}
	if h := contentHash(object("0123456789abcdef", nil)); h != "0123456789abcdef" {
		t.Errorf("contentHash of a rendered child = %q, want its content-hash annotation", h)
	}
}

// A write the write fence refused (this replica may no longer write for the parent: its Lease
// lapsed, or the parent's shard slot moved) is retried, and neither the parent's status nor an
// event reports it: events carry no slot, so the fence would let a paused replica's event through
// to a parent another replica now syncs.
func TestAFencedWriteIsNotReported(t *testing.T) {
	h := newHarness(t, copyPolicy)
	parent := objectFrom(t, `{apiVersion: v1, kind: ConfigMap, metadata: {name: big, namespace: ns, uid: p-1, resourceVersion: "1"}, data: {a: "x"}}`)
	h.cacheParent(t, parent)
	fenced := &apierrors.StatusError{ErrStatus: metav1.Status{Status: metav1.StatusFailure, Code: 503, Reason: reasonWriteFenced, Message: "write fenced: POST not sent"}}
	h.react("create", "secrets", func(clienttesting.Action) (bool, runtime.Object, error) { return true, nil, fenced })

	err := h.c.syncer.sync(t.Context(), "ns/big")
	if err == nil || isTerminal(err) {
		t.Fatalf("sync: %v, want the fenced write, retried", err)
	}
	if w := strings.Join(h.writes(), ","); w != "create secrets" {
		t.Errorf("writes %q, want only the fenced create (no status write)", w)
	}
	if n := len(h.recorder.Events); n != 0 {
		t.Errorf("%d events recorded, want none: %s", n, <-h.recorder.Events)
	}
}
