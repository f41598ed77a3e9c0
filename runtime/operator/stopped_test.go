package operator

import (
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/fake"

	"metacel.dev/metacel/runtime/kinds"
	"metacel.dev/metacel/runtime/ledger"
	"metacel.dev/metacel/runtime/rollout"
	"metacel.dev/metacel/runtime/source"
)

// hiding is a mapper that stops knowing one resource while hide is set: its CRD deleted.
type hiding struct {
	kinds.Mapper
	hide atomic.Bool
	gr   schema.GroupResource
}

func (h *hiding) ForResource(gvr schema.GroupVersionResource) (kinds.Info, bool) {
	if h.hide.Load() && gvr.GroupResource() == h.gr {
		return kinds.Info{}, false
	}
	return h.Mapper.ForResource(gvr)
}
func (h *hiding) ForKind(gvk schema.GroupVersionKind) (kinds.Info, bool) {
	i, ok := h.Mapper.ForKind(gvk)
	if ok && h.hide.Load() && i.GVR.GroupResource() == h.gr {
		return kinds.Info{}, false
	}
	return i, ok
}
func (h *hiding) Versions(gr schema.GroupResource) []string {
	if h.hide.Load() && gr == h.gr {
		return nil
	}
	return h.Mapper.Versions(gr)
}

// A policy that stops while it waits for its resources (its parent's CRD deleted) keeps its
// claim: its record was written Stopped, so once the CRD was back the policy rejected until then
// took every parent.
func TestAPolicyWaitingForItsCRDKeepsItsClaim(t *testing.T) {
	catalog := kinds.NewCatalog()
	catalog.AddCRD(cogsDefinition(false))
	m := &hiding{Mapper: catalog, gr: cogsGVR.GroupResource()}
	s := crdSet(t, catalog)
	s.mapper = m
	s.deps.Mapper = m
	t0 := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	const zUnit, aUnit = "configmap/ns/z/p.yaml", "configmap/ns/a/p.yaml"
	client := fake.NewClientset(ranLease("cog", t0), stableRecord(t, "cog", zUnit))
	s.deps.Ledger = ledger.New(client, recordsNS)
	s.ctrls.deps = s.deps // the controllers the set starts read them too
	s.rollouts.records = rollout.NewStore(client, recordsNS)
	units := []source.Unit{
		{Name: aUnit, Data: []byte(strings.Replace(cogPolicy, "name: cog", "name: cog2", 1))},
		{Name: zUnit, Data: []byte(cogPolicy)},
	}
	s.update(source.Snapshot{Source: "configmaps", Units: units}, 1)
	if _, ok := s.ctrls.Running()["cog"]; !ok {
		t.Fatalf("running %v, want cog", s.ctrls.Running())
	}
	m.hide.Store(true) // the CRD deleted
	s.reconcile(func(*unitState) bool { return true }, nil)
	if rec, _ := rollout.NewStore(client, recordsNS).Get(t.Context(), "cog"); rec == nil || rec.Stopped {
		t.Errorf("while its CRD is gone, cog's record is %+v, want it not stopped: its unit still defines it", rec)
	}
	m.hide.Store(false) // restored
	s.reconcile(func(*unitState) bool { return true }, nil)
	if r := s.ctrls.Running(); len(r) != 1 || r["cog"] == 0 {
		t.Errorf("CRD restored: running %v, want cog (it ran before), not cog2 (rejected until then)", r)
	}
}

// A policy rolled back whose child resource stops being served a while: its record was rewritten
// Stable when it stopped, so when the resource came back the failed version rolled out again.
func TestARolledBackPolicyWaitingForAResourceStaysRolledBack(t *testing.T) {
	s, clock, stable, ro := rollingOutToAnUnsyncableVersion(t)
	s.ctrls.mu.Lock()
	s.rollouts.records = rollout.NewStore(fake.NewClientset(), "metacel-system")
	m := &hiding{Mapper: s.mapper, gr: schema.GroupResource{Resource: "configmaps"}}
	s.mapper = m
	s.rollouts.records.NoteLoaded("a", stable.version)
	s.rollouts.records.NoteLoaded("a", ro.target.version, stable.version)
	s.ctrls.mu.Unlock()
	waitRolledBack(t, s, clock, stable, rollout.Version(ro.target.policy))
	m.hide.Store(true)
	s.reconcile(func(*unitState) bool { return true }, nil)
	m.hide.Store(false)
	s.reconcile(func(*unitState) bool { return true }, nil)
	s.ctrls.mu.Lock()
	r := s.ctrls.running["a"]
	s.ctrls.mu.Unlock()
	if r == nil {
		t.Fatal("not running")
	}
	if r.rollout != nil {
		t.Errorf("the version rolled back rolls out again from step 0 (rolledBack %q)", r.rolledBack)
	}
	if r.rolledBack == "" {
		t.Errorf("no longer RolledBack")
	}
}

// A policy rolling out whose child resource stops being served keeps the step its record says.
func TestARollingOutPolicyWaitingForAResourceKeepsItsStep(t *testing.T) {
	s, _, stable, ro := rollingOutToAnUnsyncableVersion(t)
	s.ctrls.mu.Lock()
	s.rollouts.records = rollout.NewStore(fake.NewClientset(), "metacel-system")
	s.rollouts.records.NoteLoaded("a", stable.version)
	s.rollouts.records.NoteLoaded("a", ro.target.version, stable.version)
	s.rollouts.putRecordLocked("a", nil, ro.progress.Record)
	m := &hiding{Mapper: s.mapper, gr: schema.GroupResource{Resource: "configmaps"}}
	s.mapper = m
	s.ctrls.mu.Unlock()
	m.hide.Store(true)
	s.reconcile(func(*unitState) bool { return true }, nil)
	rec, _ := s.rollouts.records.Get(t.Context(), "a")
	if rec.Phase != rollout.RollingOut {
		t.Errorf("record while waiting: phase %s target %q stopped %v: the rollout under way is forgotten", rec.Phase, rec.Target, rec.Stopped)
	}
}
