package operator

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"metacel.dev/metacel/runtime/controller"
	"metacel.dev/metacel/runtime/kinds"
	"metacel.dev/metacel/runtime/ledger"
	"metacel.dev/metacel/runtime/policy"
	"metacel.dev/metacel/runtime/rollout"
	"metacel.dev/metacel/runtime/source"
)

const recordsNS = "metacel-system"

// ranLease is the ledger Lease of a policy whose controller first started at since.
func ranLease(policy string, since time.Time) runtime.Object {
	return &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{
		Name: ledger.LeaseName(policy), Namespace: recordsNS, CreationTimestamp: metav1.NewTime(since),
	}}
}

// stableRecord is the rollout record of a policy whose stable version came from unit.
func stableRecord(t *testing.T, policy, unit string) runtime.Object {
	t.Helper()
	body, err := json.Marshal(rollout.Record{Phase: rollout.Stable, Stable: "v", StableUnit: unit})
	if err != nil {
		t.Fatal(err)
	}
	return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: rollout.ConfigMapName(policy), Namespace: recordsNS},
		Data: map[string]string{"record.json": string(body)}}
}

// clusterSet is a policy set, as a fresh process starts it (a restart, a new leader, another
// replica), on a cluster that holds objs: ledger Leases and rollout records.
func clusterSet(t *testing.T, objs ...runtime.Object) *policySet {
	t.Helper()
	client := fake.NewClientset(objs...)
	s := newPolicySet(t.Context(), controller.Deps{Mapper: kinds.NewCatalog(), Ledger: ledger.New(client, recordsNS)}, func() {}, 1, nil, prometheus.NewRegistry())
	s.rollouts.records = rollout.NewStore(client, recordsNS)
	return s
}

// winners are the policies a set runs, as policy@unit, once the sources have given snapshots.
func winners(s *policySet, snapshots ...map[string][]source.Unit) []string {
	for _, snap := range snapshots {
		for src, units := range snap {
			s.snapshots[src] = units
		}
		s.loadUnits(nil)
	}
	ranks := s.claimRanks() // off the lock, as reconcile reads them
	s.ctrls.mu.Lock()
	defer s.ctrls.mu.Unlock()
	var out []string
	for _, d := range sortedDesired(s.resolveConflicts(ranks)) {
		out = append(out, d.policy.Name()+"@"+d.unit.unit.Name)
	}
	return out
}

// Two policies that claim one parent resource (or one name): which one runs was decided by the
// order this process loaded them in, a counter in memory. A restart, a new leader or another
// replica, which loads both at once, ran the one whose unit sorted first: the policy rejected until
// then took over every parent, and with sharding two replicas ran different policies. Now the
// winner is decided from the cluster's objects (the ledger's Leases, the rollout records), the
// same in every process and whatever order the sources list the units in.
func TestTheFirstPolicyLoadedStillWinsAfterARestart(t *testing.T) {
	t0 := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	const zUnit, aUnit = "configmap/ns/z-web/p.yaml", "configmap/ns/a-web2/p.yaml"
	tests := []struct {
		name       string
		z, a       string           // the policies of the unit that sorts last, and of the one that sorts first
		cluster    []runtime.Object // what the cluster holds of the policies that ran
		want       []string         // policy@unit that run, by policy name
		rejected   string
		wantErrors float64
	}{
		{"one parent resource, neither ran: the policy of the unit that sorts first",
			policyText("web", "namespaces"), policyText("web2", "namespaces"),
			nil, []string{"web2@" + aUnit}, "web", 1},
		{"one parent resource: the policy that ran wins over one that never did, though its unit sorts last",
			policyText("web", "namespaces"), policyText("web2", "namespaces"),
			[]runtime.Object{ranLease("web", t0)}, []string{"web@" + zUnit}, "web2", 1},
		{"one parent resource: of two that ran, the one that ran first",
			policyText("web", "namespaces"), policyText("web2", "namespaces"),
			[]runtime.Object{ranLease("web", t0), ranLease("web2", t0.Add(time.Hour))}, []string{"web@" + zUnit}, "web2", 1},
		{"one parent resource in two versions",
			policyTextAt("web", "autoscaling/v1", "horizontalpodautoscalers"), policyTextAt("web2", "autoscaling/v2", "horizontalpodautoscalers"),
			[]runtime.Object{ranLease("web", t0)}, []string{"web@" + zUnit}, "web2", 1},
		{"one name in two units: the unit its rollout record names",
			policyText("web", "namespaces"), policyText("web", "nodes"),
			[]runtime.Object{ranLease("web", t0), stableRecord(t, "web", zUnit)}, []string{"web@" + zUnit}, "web", 1},
		{"no conflict", policyText("web", "namespaces"), policyText("web2", "nodes"),
			nil, []string{"web@" + zUnit, "web2@" + aUnit}, "", 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			z := source.Unit{Name: zUnit, Data: []byte(tc.z)}
			a := source.Unit{Name: aUnit, Data: []byte(tc.a)}
			runs := map[string][]map[string][]source.Unit{
				// the process that ran first the one, then saw the other come
				"loaded one at a time, the last-sorting first":  {{"configmaps": {z}}, {"configmaps": {a, z}}},
				"loaded one at a time, the first-sorting first": {{"configmaps": {a}}, {"configmaps": {a, z}}},
				// a restart, a new leader, another replica: both at once, in any order
				"loaded at once":           {{"configmaps": {z, a}}},
				"loaded at once, reversed": {{"configmaps": {a, z}}},
				"from two sources":         {{"configmaps": {a}, "dir": {z}}},
			}
			for how, snapshots := range runs {
				s := clusterSet(t, tc.cluster...)
				if got := winners(s, snapshots...); !slices.Equal(got, tc.want) {
					t.Errorf("%s: running %v, want %v", how, got, tc.want)
				}
				if tc.rejected != "" {
					if n := testutil.ToFloat64(s.metrics.loadErrors.WithLabelValues(tc.rejected)); n != tc.wantErrors {
						t.Errorf("%s: metacel_policy_load_errors_total{policy=%q} = %v, want %v", how, tc.rejected, n, tc.wantErrors)
					}
				}
			}
		})
	}
}

// A conflict's rank that cannot be read (the API server does not answer) leaves the running
// policy where it is: a failed read never moves the parents.
func TestAConflictWhoseRankCannotBeReadKeepsTheRunningPolicy(t *testing.T) {
	s := clusterSet(t)
	s.rollouts.records = nil
	client := fake.NewClientset()
	s.deps.Ledger = ledger.New(client, recordsNS)
	s.ctrls.deps = s.deps // the controllers the set starts read them too
	z := source.Unit{Name: "z.yaml", Data: []byte(policyText("web", "namespaces"))}
	a := source.Unit{Name: "a.yaml", Data: []byte(policyText("web2", "namespaces"))}
	s.snapshots["dir"] = []source.Unit{z, a}
	s.loadUnits(nil)
	web := s.units["z.yaml"].good[0]
	s.ctrls.running["web"] = &running{policy: web, unit: "z.yaml"}
	client.PrependReactor("get", "leases", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, errors.New("the API server does not answer, say")
	})
	if got := winners(s); strings.Join(got, ",") != "web@z.yaml" {
		t.Errorf("running %v, want web@z.yaml, the running one", got)
	}
}

// A unit whose two policies are both rejected (a ConfigMap copied under a new name before the old
// one is deleted): each one's status named whichever conflict of the unit a map gave first, often
// the other policy's, and changed from one publication to the next, so the ConfigMap's status was
// rewritten up to once a second. Each policy now says its own conflict, the same every time.
func TestEachRejectedPolicySaysItsOwnConflict(t *testing.T) {
	const oldUnit, newUnit = "configmap/ns/old/p.yaml", "configmap/ns/old-copy/p.yaml"
	s := clusterSet(t, stableRecord(t, "a", oldUnit), stableRecord(t, "b", oldUnit))
	two := []byte(policyText("a", "namespaces") + "---\n" + policyText("b", "nodes"))
	cmOld := &corev1.ObjectReference{Kind: "ConfigMap", Namespace: "ns", Name: "old"}
	cmNew := &corev1.ObjectReference{Kind: "ConfigMap", Namespace: "ns", Name: "old-copy"}
	got := winners(s, map[string][]source.Unit{"configmaps": {
		{Name: oldUnit, Data: two, ConfigMap: cmOld}, {Name: newUnit, Data: two, ConfigMap: cmNew},
	}})
	if want := []string{"a@" + oldUnit, "b@" + oldUnit}; !slices.Equal(got, want) {
		t.Fatalf("running %v, want %v", got, want)
	}
	for _, name := range []string{"a", "b"} {
		said := map[string]bool{}
		for range 50 {
			said[s.statusesByConfigMap(nil)[[2]string{"old-copy", name}].LastError] = true
		}
		for msg := range said {
			if !strings.HasPrefix(msg, fmt.Sprintf("policy %q is also defined in %s", name, oldUnit)) {
				t.Errorf("policy %s's status says %q, not its own conflict", name, msg)
			}
		}
		if len(said) != 1 {
			t.Errorf("policy %s's status changes from one publication to the next: %d messages", name, len(said))
		}
	}
}

// stoppedRecord is the rollout record of a policy that left the running policies, from unit.
func stoppedRecord(t *testing.T, policy, unit string) runtime.Object {
	t.Helper()
	body, err := json.Marshal(rollout.Record{Phase: rollout.Stable, Stable: "v", StableUnit: unit, Stopped: true})
	if err != nil {
		t.Fatal(err)
	}
	return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: rollout.ConfigMapName(policy), Namespace: recordsNS},
		Data: map[string]string{"record.json": string(body)}}
}

// web ran first, was removed, and web2 replaced it for the same parent resource. Someone applies
// web's old ConfigMap again (a GitOps sync of an old branch): web's older Lease made it win, in
// the running process and after a restart, and it took every parent over from web2. The policy
// that runs keeps running, and one whose record says it stopped ranks after one that runs.
func TestAPolicyThatComesBackDoesNotTakeTheParentsOver(t *testing.T) {
	t0 := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	const zUnit, aUnit = "configmap/ns/z-web/p.yaml", "configmap/ns/a-web2/p.yaml"
	z := source.Unit{Name: zUnit, Data: []byte(policyText("web", "namespaces"))}
	a := source.Unit{Name: aUnit, Data: []byte(policyText("web2", "namespaces"))}
	tests := []struct {
		name     string
		webGone  runtime.Object // web's record
		runsWeb2 bool           // this process runs web2
	}{
		{"web2 runs in this process, web's removal was not seen (the runtime was down)", stableRecord(t, "web", zUnit), true},
		{"after a restart, web's record says it stopped", stoppedRecord(t, "web", zUnit), false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := clusterSet(t, ranLease("web", t0), tc.webGone, ranLease("web2", t0.Add(30*24*time.Hour)), stableRecord(t, "web2", aUnit))
			if tc.runsWeb2 {
				s.ctrls.running["web2"] = &running{unit: aUnit}
			}
			got := winners(s, map[string][]source.Unit{"configmaps": {a, z}})
			if want := []string{"web2@" + aUnit}; !slices.Equal(got, want) {
				t.Errorf("running %v, want %v", got, want)
			}
		})
	}
}

// A policy that leaves the running ones says so in its rollout record, which a restarted runtime
// ranks it by.
func TestAStoppedPolicysRecordSaysItStopped(t *testing.T) {
	client := fake.NewClientset()
	s := newPolicySet(t.Context(), controller.Deps{Mapper: kinds.NewCatalog(), Ledger: ledger.New(client, recordsNS)}, func() {}, 1, nil, prometheus.NewRegistry())
	s.rollouts.records = rollout.NewStore(client, recordsNS)
	cs, err := policy.Load("web.yaml", []byte(policyText("web", "namespaces")), kinds.NewCatalog())
	if err != nil {
		t.Fatal(err)
	}
	s.rollouts.recordStoppedLocked(&running{policy: cs[0], unit: "configmap/ns/z-web/p.yaml", version: "v"})
	rec, err := rollout.NewStore(client, recordsNS).Get(t.Context(), "web")
	if err != nil || rec == nil || !rec.Stopped || rec.StableUnit != "configmap/ns/z-web/p.yaml" {
		t.Errorf("record %+v, %v; want it stopped, from its unit", rec, err)
	}
}
