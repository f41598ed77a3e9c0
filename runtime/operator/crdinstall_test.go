package operator

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	k8stesting "k8s.io/client-go/testing"

	"metacel.dev/metacel/runtime/apply"
	"metacel.dev/metacel/runtime/contract"
	"metacel.dev/metacel/runtime/controller"
	"metacel.dev/metacel/runtime/kinds"
	"metacel.dev/metacel/runtime/policy"
	"metacel.dev/metacel/runtime/source"
)

// cachePolicy is a policy named name that installs the CRD of its parent, caches.example.com.
func cachePolicy(name string) string {
	return `apiVersion: metacel.dev/v1alpha1
kind: CompositePolicy
metadata:
  name: ` + name + `
spec:
  parentResource: {apiVersion: example.com/v1, resource: caches}
  parentSchema:
    install: true
    kind: Cache
    spec:
      size: integer
`
}

// installedCRD is the CRD as the runtime applies it for the policy of text.
func installedCRD(t *testing.T, text string) *unstructured.Unstructured {
	t.Helper()
	docs, err := policy.Parse("p.yaml", []byte(text))
	if err != nil {
		t.Fatal(err)
	}
	crd, err := policy.ParentCRD(docs[0])
	if err != nil {
		t.Fatal(err)
	}
	u, err := desiredCRD(docs[0], crd)
	if err != nil {
		t.Fatal(err)
	}
	return u
}

// installSet is a policy set that installs CRDs on a fake cluster holding objs; applied returns
// the installed-by label of each CRD applied so far, in order.
func installSet(t *testing.T, objs ...runtime.Object) (s *policySet, applied func() []string) {
	t.Helper()
	client := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), map[schema.GroupVersionResource]string{
		crdGVR: "CustomResourceDefinitionList", {Group: "example.com", Version: "v1", Resource: "caches"}: "CacheList",
	}, objs...)
	var labels []string
	tracker := client.Tracker()
	client.PrependReactor("patch", crdGVR.Resource, func(a k8stesting.Action) (bool, runtime.Object, error) {
		obj := &unstructured.Unstructured{}
		if err := json.Unmarshal(a.(k8stesting.PatchAction).GetPatch(), &obj.Object); err != nil {
			return true, nil, err
		}
		labels = append(labels, obj.GetLabels()[contract.LabelInstalledBy])
		_ = tracker.Delete(crdGVR, "", obj.GetName())
		return true, obj, tracker.Add(obj)
	})
	s = newPolicySet(t.Context(), controller.Deps{Mapper: kinds.NewCatalog()}, func() {}, 1, nil, prometheus.NewRegistry())
	writer := apply.NewWriter(client)
	s.installer = &crdInstaller{client: client, runtime: writer, runs: s.ctrls.runs,
		writer: func(string, string) (*apply.Writer, error) { return writer, nil }}
	return s, func() []string { return labels }
}

// Two policies install one parent's CRD: one of them may, decided from what the API server holds
// before either writes, whatever order they load in. A restart over the CRD one of them installed
// writes nothing and refuses the other; the refused one never applies the CRD.
func TestOnePolicyOfTwinsInstallsTheCRD(t *testing.T) {
	const first, twin = "cache", "cache-twin"
	tests := []struct {
		name        string
		installedBy string // the policy the CRD in the cluster was installed for ("": no CRD)
		running     string // the policy that runs ("": none, a restart)
		wantApplied []string
		wantRefused string // the unit refused
		owner       string // the policy its refusal names
	}{
		{"a restart over the CRD the first policy installed writes nothing", first, "", nil, "b-twin.yaml", first},
		{"while the first policy runs, the twin is refused", first, first, nil, "b-twin.yaml", first},
		{"a CRD the twin installed stays the twin's over a restart", twin, "", nil, "z-cache.yaml", twin},
		{"on a cluster without the CRD, the first loaded installs it, once", "", "", []string{twin}, "z-cache.yaml", twin},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var objs []runtime.Object
			if tc.installedBy != "" {
				objs = append(objs, installedCRD(t, cachePolicy(tc.installedBy)))
			}
			s, applied := installSet(t, objs...)
			if tc.running != "" {
				r := fakeRunning(true)
				t.Cleanup(r.cancel)
				s.ctrls.running[tc.running] = r
			}
			// the twin's unit loads first: it sorts first, and comes first in its source
			s.snapshots["configmaps"] = []source.Unit{
				{Name: "b-twin.yaml", Data: []byte(cachePolicy(twin))},
				{Name: "z-cache.yaml", Data: []byte(cachePolicy(first))},
			}
			s.loadUnits(nil)
			if got := applied(); !slices.Equal(got, tc.wantApplied) {
				t.Errorf("CRDs applied for %q, want %q", got, tc.wantApplied)
			}
			for name, st := range s.units {
				refused, want := strings.Contains(st.reported, "one parent resource has one policy"), name == tc.wantRefused
				if refused != want || st.failed != want {
					t.Errorf("unit %s: failed %v, reported %q; want only %s refused", name, st.failed, st.reported, tc.wantRefused)
				}
				if refused && !strings.Contains(st.reported, `policy "`+tc.owner+`"`) {
					t.Errorf("unit %s reported %q, which does not name the policy that installs the CRD, %q", name, st.reported, tc.owner)
				}
			}
		})
	}
}

// A restart with the twins in two sources: the source that lists first holds only the twin, but
// nothing loads until the other has listed too, so the twin never gets the CRD.
func TestARestartDecidesFromEverySource(t *testing.T) {
	s, applied := installSet(t, installedCRD(t, cachePolicy("cache")))
	s.update(source.Snapshot{Source: "dir", Units: []source.Unit{{Name: "twin.yaml", Data: []byte(cachePolicy("cache-twin"))}}}, 2)
	if len(s.units) != 0 {
		t.Errorf("%d units loaded before every source listed, want none", len(s.units))
	}
	s.update(source.Snapshot{Source: "configmaps", Units: []source.Unit{{Name: "cache.yaml", Data: []byte(cachePolicy("cache"))}}}, 2)
	if got := applied(); len(got) != 0 {
		t.Errorf("CRDs applied for %q, want none", got)
	}
	st := s.units["twin.yaml"]
	if st == nil {
		t.Fatal("the twin's unit was not loaded")
	}
	if !st.failed || !strings.Contains(st.reported, `belongs to policy "cache"`) {
		t.Errorf("the twin: failed %v, reported %q; want it refused, naming cache", st.failed, st.reported)
	}
}
