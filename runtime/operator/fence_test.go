package operator

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	coordv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
	"k8s.io/klog/v2"
	clocktesting "k8s.io/utils/clock/testing"

	"metacel.dev/metacel/runtime/hashslot"
)

// testElection: the fence's window is 10 s (RenewDeadline), 5 s before a standby may acquire.
var testElection = LeaderElection{ID: "metacel", Namespace: "ns", LeaseDuration: 15 * time.Second, RenewDeadline: 10 * time.Second, RetryPeriod: 2 * time.Second}

// fakeLock is the elector's lock: each operation returns err (nil: success), after latency.
type fakeLock struct {
	clock   *clocktesting.FakeClock
	latency time.Duration
	err     error
	record  resourcelock.LeaderElectionRecord // what Get returns
}

func (l *fakeLock) Get(context.Context) (*resourcelock.LeaderElectionRecord, []byte, error) {
	l.clock.Step(l.latency)
	rec := l.record
	return &rec, nil, l.err
}

func (l *fakeLock) Create(_ context.Context, rec resourcelock.LeaderElectionRecord) error {
	return l.write(rec)
}

func (l *fakeLock) Update(_ context.Context, rec resourcelock.LeaderElectionRecord) error {
	return l.write(rec)
}

func (l *fakeLock) write(rec resourcelock.LeaderElectionRecord) error {
	l.clock.Step(l.latency)
	if l.err == nil {
		l.record = rec
	}
	return l.err
}

func (l *fakeLock) RecordEvent(string) {}
func (l *fakeLock) Identity() string   { return "me" }
func (l *fakeLock) Describe() string   { return "ns/metacel" }

// fakeTransport is the API server: it reads each request's body, after calling beforeBody.
type fakeTransport struct {
	beforeBody func()
	sent       []string // method and path of the requests whose body was read whole
}

func (t *fakeTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.Body != nil {
		if t.beforeBody != nil {
			t.beforeBody()
		}
		_, err := io.ReadAll(req.Body)
		_ = req.Body.Close()
		if err != nil {
			return nil, err
		}
	}
	t.sent = append(t.sent, req.Method+" "+req.URL.Path)
	return &http.Response{StatusCode: http.StatusOK, Body: http.NoBody, Request: req}, nil
}

func TestWriteFence(t *testing.T) {
	mine := resourcelock.LeaderElectionRecord{HolderIdentity: "me", LeaseDurationSeconds: 15}
	acquire := func(l resourcelock.Interface, _ *fakeLock, _ *clocktesting.FakeClock) error {
		return l.Create(context.Background(), mine)
	}
	// then returns steps run in order.
	then := func(steps ...func(resourcelock.Interface, *fakeLock, *clocktesting.FakeClock) error) func(resourcelock.Interface, *fakeLock, *clocktesting.FakeClock) error {
		return func(l resourcelock.Interface, f *fakeLock, c *clocktesting.FakeClock) error {
			for _, s := range steps {
				if err := s(l, f, c); err != nil {
					return err
				}
			}
			return nil
		}
	}
	wait := func(d time.Duration) func(resourcelock.Interface, *fakeLock, *clocktesting.FakeClock) error {
		return func(_ resourcelock.Interface, _ *fakeLock, c *clocktesting.FakeClock) error { c.Step(d); return nil }
	}
	renew := func(rec resourcelock.LeaderElectionRecord) func(resourcelock.Interface, *fakeLock, *clocktesting.FakeClock) error {
		return func(l resourcelock.Interface, _ *fakeLock, _ *clocktesting.FakeClock) error {
			return l.Update(context.Background(), rec)
		}
	}
	failingRenewal := func(l resourcelock.Interface, f *fakeLock, _ *clocktesting.FakeClock) error {
		f.err = errors.New("timeout")
		defer func() { f.err = nil }()
		if l.Update(context.Background(), mine) == nil {
			return errors.New("the failing renewal succeeded")
		}
		return nil
	}
	slowRenewal := func(latency time.Duration) func(resourcelock.Interface, *fakeLock, *clocktesting.FakeClock) error {
		return func(l resourcelock.Interface, f *fakeLock, _ *clocktesting.FakeClock) error {
			f.latency = latency
			defer func() { f.latency = 0 }()
			return l.Update(context.Background(), mine)
		}
	}
	readHolder := func(holder string) func(resourcelock.Interface, *fakeLock, *clocktesting.FakeClock) error {
		return func(l resourcelock.Interface, f *fakeLock, _ *clocktesting.FakeClock) error {
			f.record.HolderIdentity = holder
			_, _, err := l.Get(context.Background())
			return err
		}
	}

	tests := []struct {
		name    string
		prepare func(resourcelock.Interface, *fakeLock, *clocktesting.FakeClock) error
		method  string
		// freeze passes between the fence's first check and the transport reading the body
		freeze time.Duration
		sent   bool
	}{
		{name: "a standby writes nothing", method: http.MethodPost},
		{name: "a standby reads", method: http.MethodGet, sent: true},
		{name: "write before expiry passes", prepare: then(acquire, wait(9*time.Second)), method: http.MethodPatch, sent: true},
		{name: "write at expiry is refused", prepare: then(acquire, wait(10*time.Second)), method: http.MethodPatch},
		{name: "write after expiry is refused", prepare: then(acquire, wait(time.Minute)), method: http.MethodPost},
		{name: "delete after expiry is refused", prepare: then(acquire, wait(time.Minute)), method: http.MethodDelete},
		{name: "put after expiry is refused", prepare: then(acquire, wait(time.Minute)), method: http.MethodPut},
		{name: "GET (get, list, watch) after expiry passes", prepare: then(acquire, wait(time.Minute)), method: http.MethodGet, sent: true},
		{name: "HEAD after expiry passes", prepare: then(acquire, wait(time.Minute)), method: http.MethodHead, sent: true},
		{name: "a renewal reopens", prepare: then(acquire, wait(time.Minute), renew(mine), wait(9*time.Second)), method: http.MethodPatch, sent: true},
		{name: "a renewal opens for the window only", prepare: then(acquire, wait(time.Minute), renew(mine), wait(10*time.Second)), method: http.MethodPatch},
		{name: "a failed renewal does not extend", prepare: then(acquire, wait(8*time.Second), failingRenewal, wait(2*time.Second)), method: http.MethodPatch},
		// sent at 5 s, answered at 11 s: the window runs from 5 s, as a standby may have seen it then
		{name: "the window counts from sending the renewal", prepare: then(acquire, wait(5*time.Second), slowRenewal(6*time.Second), wait(4*time.Second)), method: http.MethodPatch},
		{name: "a slow renewal still renews", prepare: then(acquire, wait(5*time.Second), slowRenewal(6*time.Second), wait(3*time.Second)), method: http.MethodPatch, sent: true},
		{name: "a release closes at once", prepare: then(acquire, wait(time.Second), renew(resourcelock.LeaderElectionRecord{LeaseDurationSeconds: 1})), method: http.MethodPatch},
		{name: "a Lease naming another holder closes at once", prepare: then(acquire, wait(time.Second), readHolder("other")), method: http.MethodPatch},
		{name: "a Lease naming us keeps it open", prepare: then(acquire, wait(time.Second), readHolder("me")), method: http.MethodPatch, sent: true},
		{name: "a body read after expiry is refused", prepare: then(acquire, wait(9*time.Second)), method: http.MethodPatch, freeze: 2 * time.Second},
		{name: "a body read before expiry passes", prepare: then(acquire, wait(7*time.Second)), method: http.MethodPatch, freeze: 2 * time.Second, sent: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			clk := clocktesting.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
			fence := newWriteFence(klog.Background(), testElection, clk)
			inner := &fakeLock{clock: clk}
			lock := fence.lock(inner)
			if tt.prepare != nil {
				if err := tt.prepare(lock, inner, clk); err != nil {
					t.Fatal(err)
				}
			}
			api := &fakeTransport{beforeBody: func() { clk.Step(tt.freeze) }}
			var body io.Reader
			if tt.method != http.MethodGet && tt.method != http.MethodHead {
				body = strings.NewReader(`{"data":{"k":"v"}}`)
			}
			req, err := http.NewRequest(tt.method, "https://api/api/v1/namespaces/ns/configmaps/c", body)
			if err != nil {
				t.Fatal(err)
			}
			_, err = fence.wrap(api).RoundTrip(req)
			if got := len(api.sent) == 1; got != tt.sent {
				t.Errorf("sent: %v, want %v (err %v)", got, tt.sent, err)
			}
			if tt.sent {
				if err != nil {
					t.Errorf("err: %v", err)
				}
				return
			}
			var fenced *fencedError
			if !errors.As(err, &fenced) {
				t.Fatalf("err %v (%T), want a *fencedError", err, err)
			}
			if !apierrors.IsServiceUnavailable(err) || apierrors.ReasonForError(err) != reasonWriteFenced || !strings.Contains(err.Error(), "ns/metacel") {
				t.Errorf("err %q: want a 503 WriteFenced about ns/metacel", err)
			}
			if _, retry := apierrors.SuggestsClientDelay(err); !retry {
				t.Errorf("err %q suggests no retry", err)
			}
		})
	}
}

func TestFenceWindow(t *testing.T) {
	for _, tt := range []struct {
		lease, renew, want time.Duration
	}{
		{15 * time.Second, 10 * time.Second, 10 * time.Second},
		{4 * time.Second, 3 * time.Second, 3 * time.Second},
		// the record advertises 4 s (whole seconds), which standbys count with
		{4500 * time.Millisecond, 4200 * time.Millisecond, 3600 * time.Millisecond},
	} {
		if got := fenceWindow(LeaderElection{LeaseDuration: tt.lease, RenewDeadline: tt.renew}); got != tt.want {
			t.Errorf("lease %s, renew deadline %s: window %s, want %s", tt.lease, tt.renew, got, tt.want)
		}
	}
}

// leaseServer is an API server holding one Lease, accepting every other request; it records
// the requests it receives.
type leaseServer struct {
	mu       sync.Mutex
	lease    *coordv1.Lease
	requests []string
}

func (s *leaseServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.requests = append(s.requests, r.Method+" "+r.URL.Path)
	w.Header().Set("Content-Type", "application/json")
	if !strings.Contains(r.URL.Path, "/leases") {
		if r.Method == http.MethodGet {
			_, _ = io.WriteString(w, `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"c","namespace":"ns"}}`)
			return
		}
		_, _ = io.Copy(w, r.Body) // echo the object written
		return
	}
	switch r.Method {
	case http.MethodGet:
		if s.lease == nil {
			w.WriteHeader(http.StatusNotFound)
			_ = json.NewEncoder(w).Encode(apierrors.NewNotFound(coordv1.Resource("leases"), "metacel").Status())
			return
		}
	default:
		s.lease = &coordv1.Lease{}
		if err := json.NewDecoder(r.Body).Decode(s.lease); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
	}
	s.lease.APIVersion, s.lease.Kind = "coordination.k8s.io/v1", "Lease"
	_ = json.NewEncoder(w).Encode(s.lease)
}

func (s *leaseServer) received() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.requests...)
}

// TestFenceThroughClientGo wires the fence as Run and runElected do: the leader's clients are
// fenced, the Lease's are not; a refused write reaches the caller as a 503 through client-go and
// never reaches the API server.
func TestFenceThroughClientGo(t *testing.T) {
	srv := &leaseServer{}
	hs := httptest.NewServer(srv)
	defer hs.Close()
	clk := clocktesting.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	fence := newWriteFence(klog.Background(), testElection, clk)
	cfg := &rest.Config{Host: hs.URL, ContentConfig: rest.ContentConfig{ContentType: "application/json", AcceptContentTypes: "application/json"}}
	kube, err := kubernetes.NewForConfig(fence.config(cfg))
	if err != nil {
		t.Fatal(err)
	}
	lock, err := electionLock(cfg, fence, testElection, "me")
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "c", Namespace: "ns"}}
	write := func() error {
		_, err := kube.CoreV1().ConfigMaps("ns").Create(ctx, cm, metav1.CreateOptions{})
		return err
	}
	// expect checks the requests the server received since the last call
	seen := 0
	expect := func(step string, want ...string) {
		t.Helper()
		got := srv.received()[seen:]
		seen += len(got)
		if strings.Join(got, ", ") != strings.Join(want, ", ") {
			t.Errorf("%s: the API server received %q, want %q", step, got, want)
		}
	}
	refused := func(step string, err error) {
		t.Helper()
		var fenced *fencedError
		if !errors.As(err, &fenced) || !apierrors.IsServiceUnavailable(err) || apierrors.ReasonForError(err) != reasonWriteFenced {
			t.Errorf("%s: err %v (%T), want a fenced write (503 WriteFenced)", step, err, err)
		}
	}
	const (
		cms   = "POST /api/v1/namespaces/ns/configmaps"
		lease = "/apis/coordination.k8s.io/v1/namespaces/ns/leases"
	)

	refused("standby", write())
	expect("standby")
	if _, _, err := lock.Get(ctx); !apierrors.IsNotFound(err) {
		t.Fatalf("get the Lease: %v", err)
	}
	now := metav1.NewTime(clk.Now())
	rec := resourcelock.LeaderElectionRecord{HolderIdentity: "me", LeaseDurationSeconds: 15, AcquireTime: now, RenewTime: now}
	if err := lock.Create(ctx, rec); err != nil {
		t.Fatalf("acquire: %v", err)
	}
	expect("acquire", "GET "+lease+"/metacel", "POST "+lease)
	if err := write(); err != nil {
		t.Errorf("leader: %v", err)
	}
	expect("leader", cms)

	clk.Step(11 * time.Second)
	refused("after expiry", write())
	if _, err := kube.CoreV1().ConfigMaps("ns").Get(ctx, "c", metav1.GetOptions{}); err != nil {
		t.Errorf("read after expiry: %v", err)
	}
	expect("after expiry", "GET /api/v1/namespaces/ns/configmaps/c")
	if err := lock.Update(ctx, rec); err != nil { // the elector renews through the fence
		t.Fatalf("renew after expiry: %v", err)
	}
	expect("renewal", "PUT "+lease+"/metacel")
	if err := write(); err != nil {
		t.Errorf("renewed: %v", err)
	}
	expect("renewed", cms)

	if err := lock.Update(ctx, resourcelock.LeaderElectionRecord{LeaseDurationSeconds: 1}); err != nil {
		t.Fatalf("release: %v", err)
	}
	refused("released", write())
	expect("released", "PUT "+lease+"/metacel")
}

// A sharded replica's fence opens with its shard Lease's renewals and, for a write made for a
// parent (its context says the parent's slot), only while the replica holds that slot: checked
// when the write is handed over and again as its body is read.
func TestShardWriteFence(t *testing.T) {
	held := map[int]bool{3: true}
	tests := []struct {
		name    string
		renewed time.Duration // ago; 0: never
		slot    int           // -1: a write for no parent
		// lose gives slot 3 up between the first check and the body read
		lose bool
		sent bool
	}{
		{name: "never renewed: nothing written", slot: 3},
		{name: "renewed, a held slot: written", renewed: time.Second, slot: 3, sent: true},
		{name: "renewed, a slot not held: refused", renewed: time.Second, slot: 4},
		{name: "renewed, no slot: written", renewed: time.Second, slot: -1, sent: true},
		{name: "renewed past the deadline, a held slot: refused", renewed: 10 * time.Second, slot: 3},
		{name: "the slot given up as the body is read: refused", renewed: time.Second, slot: 3, lose: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			clk := clocktesting.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
			fence := newShardFence(klog.Background(), Sharding{Namespace: "ns", Identity: "me", LeaseDuration: 15 * time.Second, RenewDeadline: 10 * time.Second}, clk)
			var mu sync.Mutex
			slots := map[int]bool{}
			for k, v := range held {
				slots[k] = v
			}
			fence.setSlots(func(slot int) bool { mu.Lock(); defer mu.Unlock(); return slots[slot] })
			if tt.renewed > 0 {
				fence.renewedAt(clk.Now())
				clk.Step(tt.renewed)
			}
			api := &fakeTransport{beforeBody: func() {
				if tt.lose {
					mu.Lock()
					delete(slots, 3)
					mu.Unlock()
				}
			}}
			ctx := context.Background()
			if tt.slot >= 0 {
				ctx = hashslot.WithSlot(ctx, tt.slot)
			}
			req, err := http.NewRequestWithContext(ctx, http.MethodPost, "https://api/api/v1/namespaces/ns/pods", strings.NewReader(`{}`))
			if err != nil {
				t.Fatal(err)
			}
			_, err = fence.wrap(api).RoundTrip(req)
			if got := len(api.sent) == 1; got != tt.sent {
				t.Fatalf("sent: %v, want %v (err %v)", got, tt.sent, err)
			}
			if !tt.sent && apierrors.ReasonForError(err) != reasonWriteFenced {
				t.Errorf("err %v, want WriteFenced", err)
			}
		})
	}
}

// A deleted leader Lease reads, to a standby, as the record it last saw until that record's
// duration has passed since it last changed: the standby does not lead while the old leader's
// fence may be open. To the leader it reads as gone: its elector creates it again.
func TestADeletedLeaderLeaseIsHeldForItsDuration(t *testing.T) {
	gone := apierrors.NewNotFound(coordv1.Resource("leases"), "metacel")
	tests := []struct {
		name   string
		holder string
		after  time.Duration
		found  bool
	}{
		{"a standby, just after the deletion", "other", time.Second, true},
		{"a standby, before the duration has passed", "other", 14 * time.Second, true},
		{"a standby, once it has passed", "other", 15 * time.Second, false},
		{"the leader itself", "me", time.Second, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			clk := clocktesting.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
			inner := &fakeLock{clock: clk, record: resourcelock.LeaderElectionRecord{HolderIdentity: tt.holder, LeaseDurationSeconds: 15}}
			lock := newWriteFence(klog.Background(), testElection, clk).lock(inner)
			if _, _, err := lock.Get(t.Context()); err != nil {
				t.Fatal(err)
			}
			inner.err = gone
			clk.Step(tt.after)
			rec, _, err := lock.Get(t.Context())
			if found := err == nil; found != tt.found {
				t.Fatalf("Get after %s: %v, %v; want found %v", tt.after, rec, err, tt.found)
			}
			if tt.found && rec.HolderIdentity != tt.holder {
				t.Errorf("holder %q, want %q", rec.HolderIdentity, tt.holder)
			}
		})
	}
}
