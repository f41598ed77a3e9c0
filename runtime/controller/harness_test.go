package controller

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	kubefake "k8s.io/client-go/kubernetes/fake"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/clock"
	"sigs.k8s.io/yaml"

	"metacel.dev/metacel/runtime/apply"
	"metacel.dev/metacel/runtime/compact"
	"metacel.dev/metacel/runtime/informers"
	"metacel.dev/metacel/runtime/kinds"
	"metacel.dev/metacel/runtime/ledger"
	"metacel.dev/metacel/runtime/policy"
)

// harness is a controller over a fake dynamic client whose caches the test fills: sync runs
// for real, and the client records what it was asked to write.
type harness struct {
	c        *Controller
	client   *dynamicfake.FakeDynamicClient
	recorder *events.FakeRecorder
	// kube holds the ledger's Leases
	kube *kubefake.Clientset
}

func newHarness(t testing.TB, policyText string, crdFiles ...string) *harness {
	t.Helper()
	catalog, err := kinds.LoadCRDFiles(crdFiles)
	if err != nil {
		t.Fatal(err)
	}
	compiled, err := policy.Load("p.yaml", []byte(policyText), catalog)
	if err != nil || len(compiled) != 1 {
		t.Fatalf("load policy: %v", err)
	}
	p := compiled[0]
	client := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), map[schema.GroupVersionResource]string{
		{Version: "v1", Resource: "secrets"}:    "SecretList",
		{Version: "v1", Resource: "configmaps"}: "ConfigMapList",
		widgetsGVR:                              "WidgetList",
		hpasV1GVR:                               "HorizontalPodAutoscalerList",
		hpasV2GVR:                               "HorizontalPodAutoscalerList",
	})
	rec := events.NewFakeRecorder(100)
	kube := kubefake.NewClientset()
	c := New(p, Deps{Writer: apply.NewWriter(client), Mapper: catalog, Recorder: rec,
		Metrics: NewMetrics(prometheus.NewRegistry()), Clock: clock.RealClock{}, Ledger: ledger.New(kube, "metacel-system")}, Options{})
	// each cache keeps only the index the controller asks of the pool for it
	newInformer := func(index string) cache.SharedIndexInformer {
		return cache.NewSharedIndexInformer(&cache.ListWatch{}, &unstructured.Unstructured{}, 0, informers.Indexers([]string{index}))
	}
	c.caches.parents = informers.Fixed(p.Parent.GVR, newInformer(informers.ByUID))
	sel, err := parentSelector(p)
	if err != nil {
		t.Fatal(err)
	}
	c.selector = sel
	for gvr := range p.ChildResources {
		c.caches.children[gvr.String()] = &childCache{Cache: informers.Fixed(gvr, newInformer(informers.ByParentUID))}
	}
	t.Cleanup(c.queue.ShutDown)
	return &harness{c: c, client: client, recorder: rec, kube: kube}
}

// cacheParent puts a parent in the parent cache, as a list or watch puts it there (cached),
// and notes its event, as the controller's handler of the informer's event does.
func (h *harness) cacheParent(t testing.TB, obj *unstructured.Unstructured) {
	t.Helper()
	if err := h.c.caches.parents.Whole().GetIndexer().Add(cached(t, obj)); err != nil {
		t.Fatal(err)
	}
	h.c.states.noteParentEvent()
}

// cached is obj as the runtime's caches hold it: decoded by package compact from its JSON.
func cached(t testing.TB, obj *unstructured.Unstructured) *compact.Object {
	t.Helper()
	data, err := obj.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	o, err := compact.Decode(data)
	if err != nil {
		t.Fatal(err)
	}
	return o
}

// cacheChild puts an object in the cache of its child resource.
func (h *harness) cacheChild(t *testing.T, obj *unstructured.Unstructured) {
	t.Helper()
	res, ok := h.c.syncer.writer.resourceOf(obj)
	if !ok {
		t.Fatalf("%s is of no child resource of the policy", obj.GetKind())
	}
	if err := h.c.caches.children[res.GVR.String()].Whole().GetIndexer().Add(cached(t, obj)); err != nil {
		t.Fatal(err)
	}
}

// writes returns the write actions the client received, as "verb resource[/subresource]".
func (h *harness) writes() []string {
	var out []string
	for _, a := range h.client.Actions() {
		switch a.GetVerb() {
		case "get", "list", "watch":
			continue
		}
		r := a.GetResource().Resource
		if a.GetSubresource() != "" {
			r += "/" + a.GetSubresource()
		}
		out = append(out, a.GetVerb()+" "+r)
	}
	return out
}

// react makes the client answer verb (create, patch for an apply, ...) on resource with fn,
// before its default reaction.
func (h *harness) react(verb, resource string, fn clienttesting.ReactionFunc) {
	h.client.PrependReactor(verb, resource, fn)
}

func objectFrom(t *testing.T, text string) *unstructured.Unstructured {
	t.Helper()
	u := &unstructured.Unstructured{}
	if err := yaml.Unmarshal([]byte(text), &u.Object); err != nil {
		t.Fatal(err)
	}
	return u
}

// store puts an object in the fake API server.
func (h *harness) store(t *testing.T, gvr schema.GroupVersionResource, obj *unstructured.Unstructured) {
	t.Helper()
	if err := h.client.Tracker().Create(gvr, obj, obj.GetNamespace()); err != nil {
		t.Fatal(err)
	}
}

// appliedByMetacel marks an object as applied by metacel (its managed fields).
const appliedByMetacel = `managedFields: [{manager: metacel, operation: Apply, fieldsType: FieldsV1, fieldsV1: {"f:metadata": {}}}]`
