package operator

import (
	"slices"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"

	"metacel.dev/metacel/runtime/kinds"
	"metacel.dev/metacel/runtime/policy"
)

const cogsCRD = "cogs.e2e.metacel.dev"

var cogsGVR = schema.GroupVersionResource{Group: "e2e.metacel.dev", Version: "v1", Resource: "cogs"}

func crdObject(uid types.UID, generation int64) *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetName(cogsCRD)
	u.SetUID(uid)
	u.SetGeneration(generation)
	return u
}

type noPresence struct{}

func (noPresence) CRDPresent(string) {}
func (noPresence) CRDDeleted(string) {}

// The CRD informer's events are sorted into what changed: a CRD created after the start is
// created, not changed; a new generation, a new UID under the same name (deleted and created
// again, the deletion unseen) or a deletion change its spec; a status change neither.
func TestCRDEventsAreSortedIntoWhatChanged(t *testing.T) {
	tests := []struct {
		name                   string
		event                  func(h cache.ResourceEventHandlerDetailedFuncs)
		wantSpecs, wantCreated []string
	}{
		{"listed at the start", func(h cache.ResourceEventHandlerDetailedFuncs) { h.AddFunc(crdObject("u1", 1), true) }, nil, nil},
		{"created after the start", func(h cache.ResourceEventHandlerDetailedFuncs) { h.AddFunc(crdObject("u1", 1), false) }, nil, []string{cogsCRD}},
		{"its status changed", func(h cache.ResourceEventHandlerDetailedFuncs) { h.UpdateFunc(crdObject("u1", 1), crdObject("u1", 1)) }, nil, nil},
		{"its spec changed", func(h cache.ResourceEventHandlerDetailedFuncs) { h.UpdateFunc(crdObject("u1", 1), crdObject("u1", 2)) }, []string{cogsCRD}, nil},
		{"deleted and created again, the deletion unseen", func(h cache.ResourceEventHandlerDetailedFuncs) {
			h.UpdateFunc(crdObject("u1", 1), crdObject("u2", 1))
		}, []string{cogsCRD}, nil},
		{"deleted", func(h cache.ResourceEventHandlerDetailedFuncs) { h.DeleteFunc(crdObject("u1", 1)) }, []string{cogsCRD}, nil},
		{"deleted, its final state unknown", func(h cache.ResourceEventHandlerDetailedFuncs) {
			h.DeleteFunc(cache.DeletedFinalStateUnknown{Key: cogsCRD, Obj: crdObject("u1", 1)})
		}, []string{cogsCRD}, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := &crdChanges{signal: make(chan struct{}, 1), ch: newCRDChange()}
			tc.event(c.handler(noPresence{}))
			ch := c.take()
			if got := sortedNames(ch.specs); !slices.Equal(got, tc.wantSpecs) {
				t.Errorf("spec changed: %v, want %v", got, tc.wantSpecs)
			}
			if got := sortedNames(ch.created); !slices.Equal(got, tc.wantCreated) {
				t.Errorf("created: %v, want %v", got, tc.wantCreated)
			}
		})
	}
}

// A CRD created restarts no policy that runs on it: such a policy compiled against that very
// CRD. A runtime that installs a policy's CRD starts the policy once the API server serves the
// CRD, which may come before the informer's event of it; taken as a change of its spec, the event
// started the policy a second time (the flake of e2e TestAParentAPIGainsAVersionConvertedInCEL:
// "generation 2"). A changed spec restarts it; a unit that failed naming the CRD loads again
// either way, and a waiting one always.
func TestACRDCreatedRestartsNoPolicyThatRunsOnIt(t *testing.T) {
	onCogs := &policy.Compiled{Parent: kinds.Info{GVR: cogsGVR, Kind: "Cog"}}
	running := &unitState{good: []*policy.Compiled{onCogs}}
	failed := &unitState{failed: true, crds: map[string]bool{cogsCRD: true}}
	waiting := &unitState{waiting: true}
	tests := []struct {
		name                                          string
		ch                                            crdChange
		wantRunning, wantFailed, wantWaiting, restart bool
	}{
		{"created", crdChange{specs: map[string]bool{}, created: map[string]bool{cogsCRD: true}}, false, true, true, false},
		{"its spec changed", crdChange{specs: map[string]bool{cogsCRD: true}, created: map[string]bool{}}, true, true, true, true},
		{"another CRD's spec changed", crdChange{specs: map[string]bool{"gears.e2e.metacel.dev": true}, created: map[string]bool{}}, false, false, true, false},
		{"a status changed", newCRDChange(), false, false, true, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			affected := affectedBy(tc.ch)
			for _, u := range []struct {
				name string
				st   *unitState
				want bool
			}{{"running", running, tc.wantRunning}, {"failed", failed, tc.wantFailed}, {"waiting", waiting, tc.wantWaiting}} {
				if got := affected(u.st); got != u.want {
					t.Errorf("the %s unit loaded again: %v, want %v", u.name, got, u.want)
				}
			}
			restart := restartsFor(tc.ch)
			if got := restart != nil && restart(onCogs); got != tc.restart {
				t.Errorf("the running policy restarted: %v, want %v", got, tc.restart)
			}
		})
	}
}

func sortedNames(m map[string]bool) []string {
	var out []string
	for n := range m {
		out = append(out, n)
	}
	slices.Sort(out)
	return out
}
