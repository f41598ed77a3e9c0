package controller

import (
	"slices"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clienttesting "k8s.io/client-go/testing"

	"metacel.dev/metacel/test/testpolicies"
)

// app reads db's name, listed first: db is created, then app, in one sync.
var wavesPolicy = testpolicies.YAML("app-reads-db", testpolicies.Fills{"NAME": "waves"})

// A child that reads another child that the sync has just created is created in the same sync,
// after it: the sync renders again with what its writes returned.
func TestAChildWaitingForOneTheSyncCreatedIsCreatedInTheSameSync(t *testing.T) {
	h := newHarness(t, wavesPolicy, widgetCRD)
	w := widgetWithStatus(t, "blue", nil)
	h.store(t, widgetsGVR, w) // the finalizer of a policy with an order is set on it
	h.cacheParent(t, w)
	statusWrites(h, nil)
	var created []string
	h.react("create", "configmaps", func(a clienttesting.Action) (bool, runtime.Object, error) {
		created = append(created, a.(clienttesting.CreateAction).GetObject().(metav1.Object).GetName())
		return false, nil, nil
	})
	if err := h.c.syncer.sync(t.Context(), "ns/w"); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(created, []string{"db", "app"}) {
		t.Errorf("one sync created %v, want db then app (writes %v)", created, h.writes())
	}
}

// A sync in waves sets the cleanup finalizer once: a second wave sent it again, with the
// resourceVersion the first patch had changed, which the API server refuses (409 Conflict), and
// every new parent of an ordered policy failed its first sync.
func TestASyncInWavesSetsTheFinalizerOnce(t *testing.T) {
	h := newHarness(t, wavesPolicy, widgetCRD)
	w := widgetWithStatus(t, "blue", nil)
	h.store(t, widgetsGVR, w)
	h.cacheParent(t, w)
	statusWrites(h, nil)
	var patches []string
	h.react("patch", "widgets", func(a clienttesting.Action) (bool, runtime.Object, error) {
		if p := string(a.(clienttesting.PatchAction).GetPatch()); strings.Contains(p, "finalizers") {
			patches = append(patches, p)
		}
		return false, nil, nil
	})
	if err := h.c.syncer.sync(t.Context(), "ns/w"); err != nil {
		t.Fatal(err)
	}
	if len(patches) != 1 {
		t.Errorf("finalizer patches %q, want one", patches)
	}
}
