package controller

import (
	"errors"
	"slices"
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

// orderedWidgetPolicy makes ConfigMaps db and app of a Widget, app after db (it reads it).
var orderedWidgetPolicy = colorsPolicy(`    - id: db
      template: {apiVersion: v1, kind: ConfigMap, metadata: {name: "${parent.metadata.name}-db"}}
    - id: app
      template: {apiVersion: v1, kind: ConfigMap, metadata: {name: "${parent.metadata.name}-app"}, data: {db: "${children.db.metadata.name}"}}
`)

func orderedWidgetChild(t *testing.T, id string) *unstructured.Unstructured {
	return objectFrom(t, `{apiVersion: v1, kind: ConfigMap, metadata: {name: w-`+id+`, namespace: ns, uid: c-`+id+`, resourceVersion: "3",
  ownerReferences: [{apiVersion: e2e.metacel.dev/v1, kind: Widget, name: w, uid: w-1, controller: true}],
  labels: {app.kubernetes.io/managed-by: metacel, metacel.dev/policy: colors, metacel.dev/parent-uid: w-1, metacel.dev/child-id: `+id+`}, `+appliedByMetacel+`}}`)
}

// deletedWidget stores and caches the widget w, deleted and held by the cleanup finalizer.
func deletedWidget(t *testing.T, h *harness) {
	t.Helper()
	w := widgetWithStatus(t, "red", nil)
	w.SetResourceVersion("5")
	w.SetFinalizers([]string{contract.Finalizer})
	w.Object["metadata"].(map[string]any)["deletionTimestamp"] = "2026-01-01T00:00:00Z"
	h.store(t, widgetsGVR, w)
	h.cacheParent(t, w)
}

// reportedAs checks that the last status written says reason in the condition of type cond, and
// that a Warning event says it too.
func reportedAs(t *testing.T, h *harness, sent []map[string]any, cond, reason string) {
	t.Helper()
	if len(sent) == 0 {
		t.Fatalf("no status written: the parent does not say %s", reason)
	}
	got := ""
	conds, _ := sent[len(sent)-1]["conditions"].([]any)
	for _, c := range conds {
		if m, _ := c.(map[string]any); m["type"] == cond {
			got, _ = m["reason"].(string)
		}
	}
	if got != reason {
		t.Errorf("%s says %q, want %q", cond, got, reason)
	}
	var events []string
	for len(h.recorder.Events) > 0 {
		events = append(events, <-h.recorder.Events)
	}
	if !slices.ContainsFunc(events, func(e string) bool { return strings.HasPrefix(e, "Warning "+reason) }) {
		t.Errorf("events %q, want a Warning %s", events, reason)
	}
}

// The finalizer patch refused (RBAC Forbidden, a webhook denying parent updates) left no condition
// and no event: the parent said nothing.
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
	if err := h.c.syncer.sync(t.Context(), "ns/w"); err == nil || isTerminal(err) {
		t.Errorf("sync: %v, want a retried failure", err)
	}
	reportedAs(t, h, *sent, contract.ConditionSynced, contract.ReasonApplyFailed)
}

// A deleted parent whose child's deletion was Forbidden was retried, saying nothing of why it
// stays.
func TestADeletedParentWhoseChildCannotBeDeletedSaysWhy(t *testing.T) {
	h := newHarness(t, orderedWidgetPolicy, widgetCRD)
	sent := statusWrites(h, nil)
	h.react("delete", "configmaps", func(a clienttesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewForbidden(schema.GroupResource{Resource: "configmaps"}, "x", errors.New("RBAC: cannot delete"))
	})
	deletedWidget(t, h)
	for _, id := range []string{"db", "app"} {
		c := orderedWidgetChild(t, id)
		h.store(t, configmapsGVR, c)
		h.cacheChild(t, c)
	}
	if err := h.c.syncer.sync(t.Context(), "ns/w"); err == nil || isTerminal(err) {
		t.Errorf("sync: %v, want a retried failure", err)
	}
	reportedAs(t, h, *sent, contract.ConditionSynced, contract.ReasonApplyFailed)
}

// A deleted parent whose last child never goes (a finalizer no one removes) said nothing, and was
// not looked at again: DeletionBlocked past the deadline.
func TestADeletedParentHeldByItsLastChildSaysDeletionBlocked(t *testing.T) {
	h := newHarness(t, orderedWidgetPolicy, widgetCRD)
	h.c.deps.Clock = clocktesting.NewFakeClock(time.Date(2026, 1, 1, 1, 0, 0, 0, time.UTC)) // an hour after the deletion
	sent := statusWrites(h, nil)
	deletedWidget(t, h)
	c := orderedWidgetChild(t, "db") // the last child left: nothing waits for it
	c.Object["metadata"].(map[string]any)["deletionTimestamp"] = "2026-01-01T00:00:01Z"
	c.SetFinalizers([]string{"example.com/never"})
	h.store(t, configmapsGVR, c)
	h.cacheChild(t, c)
	if err := h.c.syncer.sync(t.Context(), "ns/w"); err != nil {
		t.Fatal(err)
	}
	reportedAs(t, h, *sent, contract.ConditionReady, contract.ReasonDeletionBlocked)
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
	if len(after) != 5 || after[4] != time.Minute {
		t.Errorf("requeued after %v: want a minute, for a parent being deleted for days whose child does not go", after)
	}
}
