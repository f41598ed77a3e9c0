package operator

import (
	"slices"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/clock"
	"k8s.io/utils/ptr"

	"metacel.dev/metacel/runtime/apply"
	"metacel.dev/metacel/runtime/controller"
	"metacel.dev/metacel/runtime/informers"
	"metacel.dev/metacel/runtime/kinds"
	"metacel.dev/metacel/runtime/policy"
	"metacel.dev/metacel/runtime/source"
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
		name                 string
		event                func(h cache.ResourceEventHandlerDetailedFuncs)
		wantNamed, wantSpecs []string
	}{
		{"listed at the start", func(h cache.ResourceEventHandlerDetailedFuncs) { h.AddFunc(crdObject("u1", 1), true) }, nil, nil},
		{"created after the start", func(h cache.ResourceEventHandlerDetailedFuncs) { h.AddFunc(crdObject("u1", 1), false) }, []string{cogsCRD}, nil},
		{"its status changed", func(h cache.ResourceEventHandlerDetailedFuncs) { h.UpdateFunc(crdObject("u1", 1), crdObject("u1", 1)) }, nil, nil},
		{"its spec changed", func(h cache.ResourceEventHandlerDetailedFuncs) { h.UpdateFunc(crdObject("u1", 1), crdObject("u1", 2)) }, []string{cogsCRD}, []string{cogsCRD}},
		{"deleted and created again, the deletion unseen", func(h cache.ResourceEventHandlerDetailedFuncs) {
			h.UpdateFunc(crdObject("u1", 1), crdObject("u2", 1))
		}, []string{cogsCRD}, []string{cogsCRD}},
		{"deleted", func(h cache.ResourceEventHandlerDetailedFuncs) { h.DeleteFunc(crdObject("u1", 1)) }, []string{cogsCRD}, []string{cogsCRD}},
		{"deleted, its final state unknown", func(h cache.ResourceEventHandlerDetailedFuncs) {
			h.DeleteFunc(cache.DeletedFinalStateUnknown{Key: cogsCRD, Obj: crdObject("u1", 1)})
		}, []string{cogsCRD}, []string{cogsCRD}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := &crdChanges{signal: make(chan struct{}, 1), ch: newCRDChange()}
			tc.event(c.handler(noPresence{}))
			ch := c.take()
			if got := sortedNames(ch.named); !slices.Equal(got, tc.wantNamed) {
				t.Errorf("created, deleted or changed: %v, want %v", got, tc.wantNamed)
			}
			if got := sortedNames(ch.specs); !slices.Equal(got, tc.wantSpecs) {
				t.Errorf("spec changed: %v, want %v", got, tc.wantSpecs)
			}
		})
	}
}

// A CRD created makes the policies that run on it compile again, but restarts none by itself (the
// restart of one that compiles otherwise is TestAPolicyOnACRDCreatedRestartsOnlyIfItCompilesOtherwise);
// a changed spec restarts them; a unit that failed naming the CRD loads again either way, and a
// waiting one always.
func TestACRDChangeLoadsAgainWhatItMayChange(t *testing.T) {
	onCogs := &policy.Compiled{Parent: kinds.Info{GVR: cogsGVR, Kind: "Cog"}}
	running := &unitState{good: []*policy.Compiled{onCogs}}
	failed := &unitState{failed: true, crds: map[string]bool{cogsCRD: true}}
	waiting := &unitState{waiting: true}
	tests := []struct {
		name                                          string
		ch                                            crdChange
		wantRunning, wantFailed, wantWaiting, restart bool
	}{
		{"created", crdCreated(cogsCRD), true, true, true, false},
		{"its spec changed", crdSpecChanged(cogsCRD), true, true, true, true},
		{"another CRD's spec changed", crdSpecChanged("gears.e2e.metacel.dev"), false, false, true, false},
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

// A policy running on a CRD whose creation the runtime hears of late compiled against that very
// CRD: a runtime that installs a policy's CRD starts the policy once the API server serves the
// CRD, which may come before the informer's event of it. Taken as a change of the CRD's spec, the
// event started the policy a second time (a cause that fits the flake of e2e
// TestAParentAPIGainsAVersionConvertedInCEL: "generation 2"). So the policy compiles again and
// restarts only if it compiles otherwise: against another CRD of that name (one deleted before
// the informer's first list, and created again); a changed spec restarts it whatever it compiles.
func TestAPolicyOnACRDCreatedRestartsOnlyIfItCompilesOtherwise(t *testing.T) {
	catalog := kinds.NewCatalog()
	catalog.AddCRD(cogsDefinition(false))
	s := crdSet(t, catalog)
	s.update(source.Snapshot{Source: "dir", Units: []source.Unit{{Name: "cog.yaml", Data: []byte(cogPolicy)}}}, 1)
	generation := func() int { return s.ctrls.Running()["cog"] }
	if generation() != 1 {
		t.Fatalf("the policy runs at generation %d, want 1", generation())
	}
	s.crdsChanged(crdCreated(cogsCRD))
	if generation() != 1 {
		t.Errorf("the CRD it runs on created (heard of late): generation %d, want 1 (not restarted)", generation())
	}
	catalog.AddCRD(cogsDefinition(true)) // another CRD of that name: its Cogs have teeth
	s.crdsChanged(crdCreated(cogsCRD))
	if generation() != 2 {
		t.Errorf("another CRD of that name created: generation %d, want 2 (restarted)", generation())
	}
	s.crdsChanged(crdSpecChanged(cogsCRD))
	if generation() != 3 {
		t.Errorf("the CRD's spec changed: generation %d, want 3 (restarted)", generation())
	}
}

const cogPolicy = `apiVersion: metacel.dev/v1alpha1
kind: CompositePolicy
metadata:
  name: cog
spec:
  parentResource: {apiVersion: e2e.metacel.dev/v1, resource: cogs}
  childResources:
    - {apiVersion: v1, resource: configmaps}
  children:
    - id: cm
      template:
        apiVersion: v1
        kind: ConfigMap
        metadata: {name: "${parent.metadata.name}"}
        data: {size: "${string(parent.spec.size)}"}
`

// cogsDefinition is the CRD of the Cogs; teeth adds an integer field to their spec.
func cogsDefinition(teeth bool) *apiextensionsv1.CustomResourceDefinition {
	spec := map[string]apiextensionsv1.JSONSchemaProps{"size": {Type: "integer"}}
	if teeth {
		spec["teeth"] = apiextensionsv1.JSONSchemaProps{Type: "integer"}
	}
	v := apiextensionsv1.CustomResourceDefinitionVersion{Name: "v1", Served: true, Storage: true,
		Subresources: &apiextensionsv1.CustomResourceSubresources{Status: &apiextensionsv1.CustomResourceSubresourceStatus{}},
		Schema: &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{Type: "object",
			Properties: map[string]apiextensionsv1.JSONSchemaProps{"spec": {Type: "object", Properties: spec},
				"status": {Type: "object", XPreserveUnknownFields: ptr.To(true)}}}}}
	return &apiextensionsv1.CustomResourceDefinition{Spec: apiextensionsv1.CustomResourceDefinitionSpec{Group: "e2e.metacel.dev", Scope: apiextensionsv1.NamespaceScoped,
		Names: apiextensionsv1.CustomResourceDefinitionNames{Plural: "cogs", Kind: "Cog", ListKind: "CogList"}, Versions: []apiextensionsv1.CustomResourceDefinitionVersion{v}}}
}

// crdSet is a policy set on a fake cluster of Cogs and ConfigMaps, whose mapper is catalog.
func crdSet(t *testing.T, catalog *kinds.Catalog) *policySet {
	t.Helper()
	client := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), map[schema.GroupVersionResource]string{
		cogsGVR: "CogList", {Version: "v1", Resource: "configmaps"}: "ConfigMapList",
	})
	reg := prometheus.NewRegistry()
	deps := controller.Deps{
		Mapper: catalog, Pool: informers.NewPool(t.Context(), client, nil),
		Metrics: controller.NewMetrics(reg), Clock: clock.RealClock{}, Writer: apply.NewWriter(client),
	}
	s := newPolicySet(t.Context(), deps, func() {}, 1, nil, reg)
	t.Cleanup(s.ctrls.stopAll)
	return s
}

// crdCreated is the change of a CRD created.
func crdCreated(name string) crdChange {
	return crdChange{named: map[string]bool{name: true}, specs: map[string]bool{}}
}

// crdSpecChanged is the change of a CRD whose spec changed.
func crdSpecChanged(name string) crdChange {
	return crdChange{named: map[string]bool{name: true}, specs: map[string]bool{name: true}}
}

func sortedNames(m map[string]bool) []string {
	var out []string
	for n := range m {
		out = append(out, n)
	}
	slices.Sort(out)
	return out
}
