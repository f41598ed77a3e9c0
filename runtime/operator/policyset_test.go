package operator

import (
	"context"
	"runtime"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/events"

	"metacel.dev/metacel/runtime/controller"
	"metacel.dev/metacel/runtime/kinds"
	"metacel.dev/metacel/runtime/policy"
	"metacel.dev/metacel/runtime/policystatus"
	"metacel.dev/metacel/runtime/source"
)

func policyText(name, resource string) string {
	return policyTextAt(name, "v1", resource)
}

// policyTextAt is a policy on the parent resource of the given apiVersion.
func policyTextAt(name, apiVersion, resource string) string {
	return `apiVersion: metacel.dev/v1alpha1
kind: CompositePolicy
metadata:
  name: ` + name + `
spec:
  parentResource:
    apiVersion: ` + apiVersion + `
    resource: ` + resource + `
`
}

func TestBrokenVersionKeepsTheLastGood(t *testing.T) {
	s := newPolicySet(t.Context(), controller.Deps{Mapper: kinds.NewCatalog()}, func() {}, 1, nil, prometheus.NewRegistry())
	s.snapshots["dir"] = []source.Unit{{Name: "p.yaml", Data: []byte(policyText("a", "namespaces"))}}
	s.loadUnits(nil)
	s.snapshots["dir"] = []source.Unit{{Name: "p.yaml", Data: []byte(policyText("a", "namespaces") + "  bogus: 1\n")}}
	s.loadUnits(nil)
	desired := s.resolveConflicts(s.claimRanks())
	if _, ok := desired["a"]; !ok || len(desired) != 1 {
		t.Fatalf("the last good version must stay desired, got %v", desired)
	}
	if n := testutil.ToFloat64(s.metrics.loadErrors.WithLabelValues("a")); n != 1 {
		t.Errorf("load errors of a: %v, want 1", n)
	}
	s.snapshots["dir"] = nil
	s.loadUnits(nil)
	if desired := s.resolveConflicts(s.claimRanks()); len(desired) != 0 {
		t.Errorf("a removed unit's policies must go, got %v", desired)
	}
}

// events drains a fake recorder's events.
func drain(r *events.FakeRecorder) []string {
	var out []string
	for {
		select {
		case e := <-r.Events:
			out = append(out, e)
		default:
			return out
		}
	}
}

func TestAFailureIsReportedOncePerCause(t *testing.T) {
	const gadgets = `apiVersion: metacel.dev/v1alpha1
kind: CompositePolicy
metadata: {name: gadgets}
spec:
  parentResource: {apiVersion: example.com/v1, resource: gadgets}
  bogus: 1
`
	rec := events.NewFakeRecorder(100)
	s := newPolicySet(t.Context(), controller.Deps{Mapper: kinds.NewCatalog()}, func() {}, 1, rec, prometheus.NewRegistry())
	cm := &corev1.ObjectReference{Kind: "ConfigMap", Namespace: "metacel-system", Name: "gadgets"}
	s.snapshots["configmaps"] = []source.Unit{{Name: "configmap/metacel-system/gadgets/p.yaml", Data: []byte(gadgets), ConfigMap: cm}}
	s.loadUnits(nil)
	if got := drain(rec); len(got) != 1 || !strings.Contains(got[0], "PolicyInvalid") {
		t.Fatalf("first load: events %q, want one PolicyInvalid", got)
	}
	tests := []struct {
		name       string
		crdChanged string
		edit       string
		wantRetry  bool
		wantEvents int
	}{
		{"a change to a CRD the policy does not name retries nothing", "widgets.example.com", "", false, 0},
		{"a change to a CRD the policy names retries it, and the same error says nothing new", "gadgets.example.com", "", true, 0},
		{"an edit with the same error is loaded and says nothing new", "", "# a comment\n", true, 0},
		{"an edit with another error is reported", "", "  other: 2\n", true, 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if tc.edit != "" {
				u := s.snapshots["configmaps"][0]
				u.Data = append(append([]byte{}, u.Data...), tc.edit...)
				s.snapshots["configmaps"] = []source.Unit{u}
			}
			var retried bool
			retry := func(st *unitState) bool {
				r := tc.crdChanged != "" && affectedBy(crdSpecChanged(tc.crdChanged))(st)
				retried = retried || r
				return r
			}
			s.loadUnits(retry)
			if tc.crdChanged != "" && retried != tc.wantRetry {
				t.Errorf("retried %v, want %v", retried, tc.wantRetry)
			}
			if got := drain(rec); len(got) != tc.wantEvents {
				t.Errorf("events %q, want %d", got, tc.wantEvents)
			}
		})
	}
	if n := testutil.ToFloat64(s.metrics.loadErrors.WithLabelValues("configmap/metacel-system/gadgets/p")); n != 2 {
		t.Errorf("metacel_policy_load_errors_total = %v, want 2 (two distinct failures)", n)
	}
}

func TestAConflictIsReportedOnceWhileItLasts(t *testing.T) {
	rec := events.NewFakeRecorder(100)
	s := newPolicySet(t.Context(), controller.Deps{Mapper: kinds.NewCatalog()}, func() {}, 1, rec, prometheus.NewRegistry())
	cm := &corev1.ObjectReference{Kind: "ConfigMap", Namespace: "metacel-system", Name: "b"}
	s.snapshots["dir"] = []source.Unit{{Name: "a.yaml", Data: []byte(policyText("a", "namespaces"))}}
	s.loadUnits(nil) // loaded first: it wins
	s.snapshots["configmaps"] = []source.Unit{{Name: "b.yaml", Data: []byte(policyText("a", "nodes")), ConfigMap: cm}}
	for range 3 { // rescans
		s.loadUnits(nil)
		s.resolveConflicts(s.claimRanks())
	}
	if got := drain(rec); len(got) != 1 || !strings.Contains(got[0], "PolicyConflict") {
		t.Errorf("events %q, want one PolicyConflict", got)
	}
	if n := testutil.ToFloat64(s.metrics.loadErrors.WithLabelValues("a")); n != 1 {
		t.Errorf("metacel_policy_load_errors_total = %v, want 1", n)
	}
	// the conflict ends, then begins again: that is news
	s.snapshots["configmaps"] = []source.Unit{{Name: "b.yaml", Data: []byte(policyText("b", "nodes")), ConfigMap: cm}}
	s.loadUnits(nil)
	s.resolveConflicts(s.claimRanks())
	s.snapshots["configmaps"] = []source.Unit{{Name: "b.yaml", Data: []byte(policyText("a", "nodes")), ConfigMap: cm}}
	s.loadUnits(nil)
	s.resolveConflicts(s.claimRanks())
	if got := drain(rec); len(got) != 1 {
		t.Errorf("events after the conflict came back: %q, want one", got)
	}
}

func TestAPolicyConfigMapWithoutDataIsReported(t *testing.T) {
	rec := events.NewFakeRecorder(100)
	s := newPolicySet(t.Context(), controller.Deps{Mapper: kinds.NewCatalog()}, func() {}, 1, rec, prometheus.NewRegistry())
	cm := &corev1.ObjectReference{Kind: "ConfigMap", Namespace: "metacel-system", Name: "empty"}
	s.snapshots["configmaps"] = []source.Unit{{Name: "configmap/metacel-system/empty", ConfigMap: cm, Problem: "ConfigMap metacel-system/empty is labelled metacel.dev/policy=true but has no data key"}}
	s.loadUnits(nil)
	got := drain(rec)
	if len(got) != 1 || !strings.Contains(got[0], "Warning PolicyInvalid not loaded: ConfigMap metacel-system/empty is labelled") {
		t.Errorf("events %q, want one PolicyInvalid naming the problem", got)
	}
	if n := testutil.ToFloat64(s.metrics.loadErrors.WithLabelValues("configmap/metacel-system/empty")); n != 1 {
		t.Errorf("metacel_policy_load_errors_total = %v, want 1", n)
	}
}

// fakeRunning is a running controller that stops when cancelled.
func fakeRunning(synced bool) *running {
	ctx, cancel := context.WithCancel(context.Background())
	r := &running{cancel: cancel, done: make(chan struct{}), synced: make(chan struct{})}
	if synced {
		close(r.synced)
	}
	go func() {
		<-ctx.Done()
		close(r.done)
	}()
	return r
}

func stopped(r *running) bool {
	select {
	case <-r.done:
		return true
	default:
		return false
	}
}

func TestTheOldVersionSyncsUntilTheNewOneCan(t *testing.T) {
	v1 := fakeRunning(true)
	v2 := fakeRunning(false)
	v2.predecessor = v1.handOver()
	if v2.predecessor != v1 || stopped(v1) {
		t.Fatal("v1 must keep running while v2's caches sync")
	}
	// v3 replaces v2 before v2 synced: v2 stops now, v1 still runs, until v3 has synced
	v3 := fakeRunning(false)
	v3.predecessor = v2.handOver()
	if !stopped(v2) || stopped(v1) || v3.predecessor != v1 {
		t.Fatalf("v2 stopped %v (want true), v1 stopped %v (want false), v3 replaces v1: %v", stopped(v2), stopped(v1), v3.predecessor == v1)
	}
	close(v3.synced)
	v3.stopPredecessor()
	if !stopped(v1) {
		t.Error("v1 must stop once v3 has synced")
	}
	v3.stop()
	if !stopped(v3) {
		t.Error("v3 must stop")
	}
}

// The rollout driver acts on the set's own running versions under the set's own lock, and sees
// the shards the set is given after it is made (startSharding): only the replica that drives the
// rollouts writes their records.
func TestTheRolloutDriverActsOnTheSetsVersions(t *testing.T) {
	s := newPolicySet(t.Context(), controller.Deps{Mapper: kinds.NewCatalog()}, func() {}, 1, nil, prometheus.NewRegistry())
	d := s.rollouts
	if d.mu != &s.ctrls.mu {
		t.Error("the driver must take the set's lock")
	}
	r := fakeRunning(true)
	d.running["p"] = r
	if s.ctrls.running["p"] != r {
		t.Error("the driver must see and change the set's running versions")
	}
	if d.shards() != nil {
		t.Error("no sharding: the driver must see none")
	}
	s.shards = &shards{}
	if d.shards() != s.shards {
		t.Error("the driver must see the shards the set is given after it is made")
	}
}

// Deciding which of two conflicting policies runs reads the running controllers under the lock a
// rollout's end holds while it swaps one (rollout.go): without it, the race detector (make unit
// runs this package under it) reports the loser's check, and the runtime could crash on a
// concurrent map read and write.
func TestConflictsAreResolvedUnderTheLockOfTheRunningControllers(t *testing.T) {
	s := handOverSet(t)
	units := []source.Unit{
		{Name: "a.yaml", Data: []byte(policyText("a", "namespaces"))},
		{Name: "b.yaml", Data: []byte(policyText("b", "namespaces"))},
	}
	stop, stopped := make(chan struct{}), make(chan struct{})
	go func() { // a rollout ending elsewhere, again and again
		defer close(stopped)
		for {
			select {
			case <-stop:
				return
			default:
			}
			s.ctrls.mu.Lock()
			s.ctrls.running["elsewhere"] = &running{}
			delete(s.ctrls.running, "elsewhere")
			s.ctrls.mu.Unlock()
			runtime.Gosched()
		}
	}()
	for range 20 {
		s.update(source.Snapshot{Source: "dir", Units: units}, 1)
	}
	close(stop)
	<-stopped
	if !s.ctrls.runs("a") || s.ctrls.runs("b") {
		t.Errorf("running %v, want a alone (loaded first)", s.ctrls.Running())
	}
}

// Two keys of one policy ConfigMap that define one policy: one runs, the other loses the
// conflict. The ConfigMap's state for the policy is the running one's, at every publication: a
// state read from each in turn (the units' map order) flapped, and the reporter wrote the
// ConfigMap's labels over and over.
func TestTwoKeysOfAConfigMapThatDefineOnePolicySayOneState(t *testing.T) {
	web, err := policy.Load("web.yaml", []byte(policyText("web", "namespaces")), kinds.NewCatalog())
	if err != nil {
		t.Fatal(err)
	}
	synced := make(chan struct{})
	close(synced)
	for _, runs := range []string{"cm/a.yaml", "cm/b.yaml"} {
		t.Run("running from "+runs, func(t *testing.T) {
			s := newPolicySet(t.Context(), controller.Deps{Mapper: kinds.NewCatalog()}, func() {}, 1, nil, prometheus.NewRegistry())
			cm := &corev1.ObjectReference{Kind: "ConfigMap", Namespace: "metacel-system", Name: "cm"}
			for _, name := range []string{"cm/a.yaml", "cm/b.yaml"} {
				s.units[name] = &unitState{unit: source.Unit{Name: name, ConfigMap: cm}, good: web}
			}
			s.ctrls.running["web"] = &running{policy: web[0], unit: runs, synced: synced, generation: 1}
			for range 20 {
				got := s.statusesByConfigMap(nil)[[2]string{"cm", "web"}]
				if got.State != policystatus.Running {
					t.Fatalf("state %q (%s), want Running", got.State, got.LastError)
				}
			}
		})
	}
}
