package controller

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	clienttesting "k8s.io/client-go/testing"
	clocktesting "k8s.io/utils/clock/testing"

	"metacel.dev/metacel/runtime/contract"
	"metacel.dev/metacel/test/testpolicies"
)

// The tests of this file hold that a parent whose finalizer cannot be written, or whose deletion
// is held up, says so on its status, and that nothing polls it hot (found by review, each
// failing before its fix).

const orderedWidgetPolicy = `apiVersion: metacel.dev/v1alpha1
kind: CompositePolicy
metadata: {name: colors}
spec:
  parentResource: {apiVersion: e2e.metacel.dev/v1, resource: widgets}
  childResources:
    - {apiVersion: v1, resource: configmaps}
  children:
    - id: db
      template: {apiVersion: v1, kind: ConfigMap, metadata: {name: "${parent.metadata.name}-db"}}
    - id: app
      template: {apiVersion: v1, kind: ConfigMap, metadata: {name: "${parent.metadata.name}-app"}, data: {db: "${children.db.metadata.name}"}}
`

func orderedWidgetChild(t *testing.T, id string) *unstructured.Unstructured {
	return objectFrom(t, `{apiVersion: v1, kind: ConfigMap, metadata: {name: w-`+id+`, namespace: ns, uid: c-`+id+`, resourceVersion: "3",
  ownerReferences: [{apiVersion: e2e.metacel.dev/v1, kind: Widget, name: w, uid: w-1, controller: true}],
  labels: {app.kubernetes.io/managed-by: metacel, metacel.dev/policy: colors, metacel.dev/parent-uid: w-1, metacel.dev/child-id: `+id+`}, `+appliedByMetacel+`}}`)
}

// The finalizer patch refused (RBAC Forbidden, a webhook denying parent updates): is it reported?
func TestARefusedFinalizerIsReportedOnTheParent(t *testing.T) {
	h := newHarness(t, orderedWidgetPolicy, widgetCRD)
	sent := statusWrites(h, nil)
	h.react("patch", "widgets", func(a clienttesting.Action) (bool, runtime.Object, error) {
		if a.GetSubresource() != "" {
			return false, nil, nil
		}
		return true, nil, apierrors.NewForbidden(schema.GroupResource{Group: "e2e.metacel.dev", Resource: "widgets"}, "w", errors.New("RBAC: cannot patch"))
	})
	w := widgetWithStatus(t, "red", nil)
	w.SetResourceVersion("5")
	h.store(t, widgetsGVR, w)
	h.cacheParent(t, w)
	err := h.c.syncer.sync(t.Context(), "ns/w")
	events := 0
	for len(h.recorder.Events) > 0 {
		t.Logf("event %s", <-h.recorder.Events)
		events++
	}
	t.Logf("err %v; terminal %v; status writes %d; events %d; writes %v", err, isTerminal(err), len(*sent), events, h.writes())
	if len(*sent) == 0 || events == 0 {
		t.Errorf("a refused finalizer patch leaves no Synced=False and no event: the parent says nothing")
	}
}

// A deleted parent whose child's deletion is Forbidden: retried, but does the parent say why it hangs?
func TestADeletedParentWhoseChildCannotBeDeletedSaysWhy(t *testing.T) {
	h := newHarness(t, orderedWidgetPolicy, widgetCRD)
	sent := statusWrites(h, nil)
	h.react("delete", "configmaps", func(a clienttesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewForbidden(schema.GroupResource{Resource: "configmaps"}, "x", errors.New("RBAC: cannot delete"))
	})
	w := widgetWithStatus(t, "red", nil)
	w.SetResourceVersion("5")
	w.SetFinalizers([]string{contract.Finalizer})
	w.Object["metadata"].(map[string]any)["deletionTimestamp"] = "2026-01-01T00:00:00Z"
	h.store(t, widgetsGVR, w)
	h.cacheParent(t, w)
	for _, id := range []string{"db", "app"} {
		c := orderedWidgetChild(t, id)
		h.store(t, configmapsGVR, c)
		h.cacheChild(t, c)
	}
	var errs []string
	for range 3 {
		err := h.c.syncer.sync(t.Context(), "ns/w")
		errs = append(errs, fmt.Sprintf("%v (terminal %v)", err, isTerminal(err)))
	}
	events := 0
	for len(h.recorder.Events) > 0 {
		t.Logf("event %s", <-h.recorder.Events)
		events++
	}
	t.Logf("errs %v; status writes %d; events %d; writes %v", errs, len(*sent), events, h.writes())
	if len(*sent) == 0 && events == 0 {
		t.Errorf("a deleted parent stuck on a Forbidden child deletion says nothing on the parent")
	}
}

// A deleted parent whose only remaining child never goes (a finalizer nobody removes): reported?
func TestADeletedParentHeldByItsLastChildSaysDeletionBlocked(t *testing.T) {
	h := newHarness(t, orderedWidgetPolicy, widgetCRD)
	clk := clocktesting.NewFakeClock(time.Date(2026, 1, 1, 1, 0, 0, 0, time.UTC)) // an hour after the deletion
	h.c.deps.Clock = clk
	sent := statusWrites(h, nil)
	w := widgetWithStatus(t, "red", nil)
	w.SetResourceVersion("5")
	w.SetFinalizers([]string{contract.Finalizer})
	w.Object["metadata"].(map[string]any)["deletionTimestamp"] = "2026-01-01T00:00:00Z"
	h.store(t, widgetsGVR, w)
	h.cacheParent(t, w)
	c := orderedWidgetChild(t, "db") // the last child left: nothing waits for it
	c.Object["metadata"].(map[string]any)["deletionTimestamp"] = "2026-01-01T00:00:01Z"
	c.SetFinalizers([]string{"example.com/never"})
	h.store(t, configmapsGVR, c)
	h.cacheChild(t, c)
	err := h.c.syncer.sync(t.Context(), "ns/w")
	events := 0
	for len(h.recorder.Events) > 0 {
		t.Logf("event %s", <-h.recorder.Events)
		events++
	}
	t.Logf("err %v; status writes %d; events %d; writes %v", err, len(*sent), events, h.writes())
	if len(*sent) == 0 && events == 0 {
		t.Errorf("a deleted parent held an hour by its last child's finalizer says nothing (no DeletionBlocked)")
	}
}

// A parent out of the policy's labelSelector, being deleted, whose cross-namespace child never
// goes (a finalizer no one removes): letGo asks for it again every second, for ever, with a GET
// of the parent each time, and nothing on the parent says why.
func TestAParentLetGoOfIsNotPolledEverySecond(t *testing.T) {
	text := strings.Replace(testpolicies.YAML("farcopy", testpolicies.Fills{"NAMESPACES": `["*"]`}),
		"parentResource: {apiVersion: v1, resource: configmaps}",
		"parentResource: {apiVersion: v1, resource: configmaps, labelSelector: {matchLabels: {role: parent}}}", 1)
	h := newHarness(t, text)
	var after []time.Duration
	h.c.cleanup.requeueAfter = func(_ string, d time.Duration) { after = append(after, d) }
	parent := objectFrom(t, `{apiVersion: v1, kind: ConfigMap, metadata: {name: p, namespace: ns, uid: p-1, labels: {role: other}, deletionTimestamp: "2026-11-23T12:00:00Z", finalizers: [metacel.dev/cleanup]}, data: {ns: far}}`)
	h.store(t, configmapsGVR, parent)
	child := objectFrom(t, `{apiVersion: v1, kind: Secret, metadata: {name: p-copy, namespace: far, uid: s-1, deletionTimestamp: "2026-11-23T12:00:01Z", finalizers: [example.com/never],
  labels: {app.kubernetes.io/managed-by: metacel, metacel.dev/policy: copy, metacel.dev/parent-uid: p-1, metacel.dev/child-id: copy}, `+appliedByMetacel+`}}`)
	h.store(t, secretsGVR, child)
	h.cacheChild(t, child)
	for range 5 {
		h.c.cleanup.left.remember("ns/p", "p-1")
		if err := h.c.syncer.sync(t.Context(), "ns/p"); err != nil {
			t.Fatal(err)
		}
		// the queue would hand it back a second later: left.remember was done by letGo itself
	}
	gets := 0
	for _, a := range h.client.Actions() {
		if a.GetVerb() == "get" {
			gets++
		}
	}
	t.Logf("requeues %v, GETs of the parent %d, events %d", after, gets, len(h.recorder.Events))
	if len(after) != 5 || after[4] != time.Minute {
		t.Errorf("requeued after %v: want a minute, for a parent being deleted for days whose child does not go", after)
	}
}
