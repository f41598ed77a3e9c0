package operator

import (
	"encoding/json"
	"os"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/managedfields"
	"k8s.io/apimachinery/pkg/util/managedfields/managedfieldstest"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	k8stesting "k8s.io/client-go/testing"

	"metacel.dev/metacel/runtime/apply"
	"metacel.dev/metacel/runtime/controller"
	"metacel.dev/metacel/runtime/crdinstall"
	"metacel.dev/metacel/runtime/kinds"
	"metacel.dev/metacel/runtime/policy"
	"metacel.dev/metacel/runtime/source"
)

// applyingCRDs has client keep the CRDs applied to it through a server-side apply field manager,
// as the API server does (fm holds what it stores), and counts the writes.
func applyingCRDs(client *dynamicfake.FakeDynamicClient, fm managedfieldstest.TestFieldManager) *int {
	tracker, writes := client.Tracker(), new(int)
	client.PrependReactor("patch", crdGVR.Resource, func(a k8stesting.Action) (bool, runtime.Object, error) {
		*writes++
		obj := &unstructured.Unstructured{}
		if err := json.Unmarshal(a.(k8stesting.PatchAction).GetPatch(), &obj.Object); err != nil {
			return true, nil, err
		}
		if err := fm.Apply(obj, "metacel", true); err != nil {
			return true, nil, err
		}
		live := fm.Live().(*unstructured.Unstructured)
		_ = tracker.Delete(crdGVR, "", live.GetName())
		return true, live, tracker.Add(live)
	})
	return writes
}

// The CRD of several versions applied by hand as `metacel crd` prints it (kubectl, another field
// manager, then owns its declaration annotation too), and the policy down to one version: the
// runtime's apply cannot remove an annotation kubectl co-owns. Before, a declaration left behind
// was an Update at every load, a write that changed nothing; after a restart the policy waited
// for the CRD event of that write, which never came, and never started.
func TestARestartOverADeclarationLeftBehindStartsThePolicy(t *testing.T) {
	webhook := testWebhook(t)
	several := versionedCache(t)
	data, err := os.ReadFile("../conversion/testdata/cache.yaml")
	if err != nil {
		t.Fatal(err)
	}
	text := string(data)
	head, _, _ := strings.Cut(text, "    versions:\n")
	_, tail, _ := strings.Cut(text, "  childResources:")
	oneVersion := head + "  childResources:" + tail
	declaration, err := policy.ParentDeclaration(several)
	if err != nil {
		t.Fatal(err)
	}
	byHand, err := crdinstall.Desired(parentCRDOf(t, several), "cache", declaration)
	if err != nil {
		t.Fatal(err)
	}
	fm := managedfieldstest.NewTestFieldManager(managedfields.NewDeducedTypeConverter(),
		apiextensionsv1.SchemeGroupVersion.WithKind("CustomResourceDefinition"))
	if err := fm.Update(byHand, "kubectl-client-side-apply"); err != nil {
		t.Fatal(err)
	}
	client, _ := cacheCluster(fm.Live())
	writes := applyingCRDs(client, fm)
	if _, err := installerOn(client, webhook).installParentCRD(t.Context(), several, parentCRDOf(t, several), []string{"cache"}); err != nil {
		t.Fatal(err)
	}
	start := func() *policySet {
		s := newPolicySet(t.Context(), controller.Deps{Mapper: kinds.NewCatalog()}, func() {}, 1, nil, prometheus.NewRegistry())
		writer := apply.NewWriter(client)
		s.installer = &crdInstaller{client: client, runtime: writer, runs: s.ctrls.runs, conversion: webhook,
			writer: func(string, string) (*apply.Writer, error) { return writer, nil }}
		s.snapshots["configmaps"] = []source.Unit{{Name: "cache.yaml", Data: []byte(oneVersion)}}
		return s
	}
	s := start() // the policy down to one version: one write
	s.loadUnits(nil)
	s.loadUnits(func(st *unitState) bool { return st.waiting }) // the CRD's event
	*writes = 0
	s = start() // the restart
	s.loadUnits(nil)
	for range 3 {
		s.loadUnits(func(st *unitState) bool { return st.waiting }) // CRD events in the cluster
	}
	// the fake cluster serves no resource: the unit may wait for that, not for a write of its own
	if st := s.units["cache.yaml"]; *writes > 0 || strings.Contains(st.reported, "installed the CRD") {
		t.Errorf("after a restart over an unchanged policy: %d CRD writes; the unit says %q", *writes, st.reported)
	}
}
