package controller

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/cache"
	clocktesting "k8s.io/utils/clock/testing"

	"metacel.dev/metacel/runtime/contract"
	"metacel.dev/metacel/runtime/render"
)

// The tests of this file hold how a failed sync is retried and reported: with backoff, once per
// failure, never a hot loop (found by review, each failing before its fix).

// A status the API server refuses for good is promised to be sent once, until it changes. The
// conditions of a new parent get lastTransitionTime = now, which is hashed: a second later the
// same status is a "different" object and is sent again.
func TestAStatusRefusedForGoodIsSentOnceAsTheClockMoves(t *testing.T) {
	h := newHarness(t, widgetStatusPolicy, widgetCRD)
	clk := clocktesting.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	h.c.deps.Clock = clk
	sent := statusWrites(h, apierrors.NewInvalid(schema.GroupKind{Group: "e2e.metacel.dev", Kind: "Widget"}, "w", nil))
	h.cacheParent(t, widgetWithStatus(t, "red", nil))
	var errs []error
	for range 3 {
		errs = append(errs, h.c.syncer.sync(t.Context(), "ns/w"))
		clk.Step(2 * time.Second)
	}
	events := 0
	for len(h.recorder.Events) > 0 {
		if strings.Contains(<-h.recorder.Events, contract.ReasonStatusFailed) {
			events++
		}
	}
	t.Logf("errs %v terminal=%v", errs, isTerminal(errs[0]))
	if len(*sent) != 1 || events != 1 {
		t.Errorf("%d status writes, %d StatusFailed events; want 1 and 1", len(*sent), events)
	}
}

// A transient error whose text varies (an API server in trouble answers 500s and timeouts in
// turn): each retry's Synced message differs, so each writes the status and a Warning event, and
// the status write's own echo (the parent's update event) queues the parent at once, past the
// backoff the failure asked for.
func TestARetriedFailureIsWrittenOnceWhateverItsMessage(t *testing.T) {
	h := newHarness(t, widgetChildPolicy, widgetCRD)
	sent := statusWrites(h, nil)
	msgs := transientMessages
	n := 0
	h.react("create", "configmaps", func(a clienttesting.Action) (bool, runtime.Object, error) {
		n++
		return true, nil, apierrors.NewInternalError(errors.New(msgs[n%2]))
	})
	w := widgetWithStatus(t, "red", nil)
	w.SetResourceVersion("5")
	h.cacheParent(t, w)
	handler := h.c.parentHandler()
	h.c.queue.Add("ns/w")
	start := time.Now()
	rv := 5
	for i := range 6 {
		before := len(*sent)
		if !h.c.processNextWorkItem(t.Context()) {
			t.Fatal("queue shut down")
		}
		if len(*sent) == before {
			t.Logf("sync %d wrote no status; queue len %d", i, h.c.queue.Len())
			break
		}
		// the status write lands: the informer delivers the parent at its new resourceVersion
		old := w
		w = w.DeepCopy()
		rv++
		w.SetResourceVersion(fmt.Sprint(rv))
		w.Object["status"] = (*sent)[len(*sent)-1]
		w.SetManagedFields(nil)
		owned := map[string]any{"f:status": map[string]any{"f:conditions": map[string]any{}, "f:observedGeneration": map[string]any{}, "f:color": map[string]any{}}}
		data, _ := json.Marshal(owned)
		w.Object["metadata"].(map[string]any)["managedFields"] = []any{map[string]any{"manager": "metacel", "operation": "Apply", "subresource": "status", "fieldsType": "FieldsV1", "fieldsV1": json.RawMessage(data)}}
		d, _ := json.Marshal(w.Object)
		w.Object = nil
		_ = json.Unmarshal(d, &w.Object)
		_ = h.c.caches.parents.Whole().GetIndexer().Update(cached(t, w))
		handler.OnUpdate(cached(t, old), cached(t, w))
		if h.c.queue.Len() == 0 {
			t.Logf("sync %d: parent not queued at once", i)
			break
		}
	}
	events := 0
	for len(h.recorder.Events) > 0 {
		<-h.recorder.Events
		events++
	}
	t.Logf("%d creates, %d status writes, %d events in %v", n, len(*sent), events, time.Since(start))
	if len(*sent) > 2 {
		t.Errorf("%d status writes and %d Warning events for one transient failure, each re-synced at once past the backoff", len(*sent), events)
	}
}

func TestARetriedFailureOfOneMessageIsWrittenOnce(t *testing.T) {
	saved := transientMessages
	transientMessages = []string{"same", "same"}
	defer func() { transientMessages = saved }()
	TestARetriedFailureIsWrittenOnceWhateverItsMessage(t)
}

// A related object too large to be cached is read from the API server by each sync. A 429 (or a
// 500, a timeout) on that read is transient; it becomes a terminal EvaluationError.
func TestATransientReadOfALargeRelatedObjectIsRetried(t *testing.T) {
	h := newHarness(t, secretsPolicy(`  related:
    - {id: peers, apiVersion: v1, resource: configmaps, selector: {matchLabels: {peer: "yes"}}}
`+secretChild(`type: "${parent.data.a}"`)))
	inf := cache.NewSharedIndexInformer(&cache.ListWatch{}, &unstructured.Unstructured{}, 0,
		cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})
	h.c.related.informers[configmapsGVR.String()] = inf
	big := cached(t, objectFrom(t, `{apiVersion: v1, kind: ConfigMap, metadata: {name: big, namespace: ns, uid: b-1, resourceVersion: "7", labels: {peer: "yes"}}, data: {x: "y"}}`))
	_ = inf.GetIndexer().Add(big.Omit(busyFetcher{}))
	parent := objectFrom(t, `{apiVersion: v1, kind: ConfigMap, metadata: {name: p, namespace: ns, uid: p-1, resourceVersion: "2"}, data: {a: "opaque"}}`)
	h.cacheParent(t, parent)
	err := h.c.syncer.sync(t.Context(), "ns/p")
	ev := ""
	for len(h.recorder.Events) > 0 {
		ev += <-h.recorder.Events + "; "
	}
	t.Logf("err %v; terminal %v; events %s", err, isTerminal(err), ev)
	if isTerminal(err) {
		t.Errorf("a 429 reading a large related object is terminal (the parent waits for an input to change, and no resync is set by default)")
	}
}

// A bookkeeping patch guarded by a stale cached resourceVersion gets 409: an ordinary optimistic-
// concurrency conflict, retried at once by the cache's next event. Is it shown as a failure?
func TestAStaleResourceVersionIsRetriedUnreported(t *testing.T) {
	h := newHarness(t, recreatePolicy)
	parent := objectFrom(t, `{apiVersion: v1, kind: ConfigMap, metadata: {name: p, namespace: ns, uid: p-1, resourceVersion: "2"}, data: {a: "opaque"}}`)
	h.cacheParent(t, parent)
	out, err := render.Render(t.Context(), h.c.policy, render.Input{Parent: parent})
	if err != nil {
		t.Fatal(err)
	}
	old := out.Children[0].Object.DeepCopy()
	labels := old.GetLabels()
	delete(labels, contract.LabelShardSlot)
	old.SetLabels(labels)
	old.SetUID("s-1")
	old.SetResourceVersion("3")
	meta := objectFrom(t, `{metadata: {`+appliedByMetacel+`}}`)
	old.Object["metadata"].(map[string]any)["managedFields"] = meta.Object["metadata"].(map[string]any)["managedFields"]
	h.cacheChild(t, old)
	h.store(t, secretsGVR, old)
	h.react("patch", "secrets", func(a clienttesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewConflict(schema.GroupResource{Resource: "secrets"}, old.GetName(), errors.New("the object has been modified; please apply your changes to the latest version and try again"))
	})
	err = h.c.syncer.sync(t.Context(), "ns/p")
	ev := ""
	for len(h.recorder.Events) > 0 {
		ev += <-h.recorder.Events + "; "
	}
	t.Logf("err %v; events %s", err, ev)
	if ev != "" {
		t.Errorf("a 409 from a stale cache is reported to the user as a failed sync (Warning event)")
	}
}

var transientMessages = []string{"etcdserver: request timed out", "etcdserver: leader changed"}

type busyFetcher struct{}

func (busyFetcher) Fetch(context.Context, string, string) (*unstructured.Unstructured, error) {
	return nil, apierrors.NewTooManyRequests("the server is busy", 1)
}

// Parents failing at once (an outage) are each retried after their own backoff: the first retry
// of the 100,000th is as soon as the first's, where client-go's default limiter, whose bucket all
// share (10 per second), put it 2 h 46 min later.
func TestRetriesOfManyParentsAreNotSpacedByABucket(t *testing.T) {
	limiter := retryLimiter()
	var last time.Duration
	for i := range 100000 {
		last = limiter.When(fmt.Sprint("ns/p", i))
	}
	if last > time.Second {
		t.Errorf("the 100,000th parent failing at once is retried after %v", last)
	}
}

// twoChildrenPolicy makes ConfigMaps a and b of a Widget, b of its color.
var twoChildrenPolicy = colorsPolicy(`    - id: a
      template: {apiVersion: v1, kind: ConfigMap, metadata: {name: "${parent.metadata.name}-a"}, data: {replicas: "3"}}
    - id: b
      template: {apiVersion: v1, kind: ConfigMap, metadata: {name: "${parent.metadata.name}-b"}, data: {color: "${parent.spec.color}"}}
`)

// colorsPolicy is policy "colors": Widgets make ConfigMaps, by the given child entries.
func colorsPolicy(children string) string {
	return `apiVersion: metacel.dev/v1alpha1
kind: CompositePolicy
metadata: {name: colors}
spec:
  parentResource: {apiVersion: e2e.metacel.dev/v1, resource: widgets}
  childResources:
    - {apiVersion: v1, resource: configmaps}
  children:
` + children
}

// "metacel stops writing that child": a fight over child a (an HPA owning a field) stopped every
// write of child b too, whose change the user had just made.
func TestAFightOverOneChildDoesNotHoldTheOthers(t *testing.T) {
	h := newHarness(t, twoChildrenPolicy, widgetCRD)
	statusWrites(h, nil)
	w := widgetWithStatus(t, "blue", nil) // the user changed the color to blue
	w.SetResourceVersion("5")
	h.cacheParent(t, w)
	out, err := render.Render(t.Context(), h.c.policy, render.Input{Parent: w})
	if err != nil {
		t.Fatal(err)
	}
	child := func(id, data string) *unstructured.Unstructured {
		return objectFrom(t, `{apiVersion: v1, kind: ConfigMap, metadata: {name: w-`+id+`, namespace: ns, uid: c-`+id+`, resourceVersion: "9",
  ownerReferences: [{apiVersion: e2e.metacel.dev/v1, kind: Widget, name: w, uid: w-1, controller: true}],
  labels: {app.kubernetes.io/managed-by: metacel, metacel.dev/policy: colors, metacel.dev/parent-uid: w-1, metacel.dev/child-id: `+id+`},
  managedFields: [{manager: metacel, operation: Apply, fieldsType: FieldsV1, fieldsV1: {"f:data": {"f:replicas": {}, "f:color": {}}}}]}, data: `+data+`}`)
	}
	h.cacheChild(t, child("a", `{replicas: "7"}`)) // the HPA's value
	h.cacheChild(t, child("b", `{color: red}`))    // the old color
	now := h.c.deps.Clock.Now()
	for range 6 { // metacel reverted a's replicas five times lately
		h.c.states.wroteChild(w, &out.Children[0], true, now)
	}
	var patched []string
	h.react("patch", "configmaps", func(a clienttesting.Action) (bool, runtime.Object, error) {
		patched = append(patched, a.(clienttesting.PatchAction).GetName())
		return true, child(strings.TrimPrefix(a.(clienttesting.PatchAction).GetName(), "w-"), `{}`), nil
	})
	err = h.c.syncer.sync(t.Context(), "ns/w")
	t.Logf("err %v; children patched %v", err, patched)
	if len(patched) == 0 {
		t.Errorf("child b's change is not written while child a is in a fight")
	}
}

// A child renamed whose new object cannot be created (a quota refuses it) keeps its old one: after
// a failed step, the sync creates and updates the other children but deletes nothing.
func TestNothingIsDeletedAfterAFailedWrite(t *testing.T) {
	h := newHarness(t, secretsPolicy(secretChild(`type: "${parent.data.a}"`)))
	h.cacheParent(t, objectFrom(t, `{apiVersion: v1, kind: ConfigMap, metadata: {name: p, namespace: ns, uid: p-1, resourceVersion: "2"}, data: {a: "x"}}`))
	old := objectFrom(t, `{apiVersion: v1, kind: Secret, metadata: {name: p-old, namespace: ns, uid: s-0, resourceVersion: "3",
  ownerReferences: [{apiVersion: v1, kind: ConfigMap, name: p, uid: p-1, controller: true}],
  labels: {app.kubernetes.io/managed-by: metacel, metacel.dev/policy: copy, metacel.dev/parent-uid: p-1, metacel.dev/child-id: before}, `+appliedByMetacel+`}}`)
	h.store(t, secretsGVR, old)
	h.cacheChild(t, old)
	refuse := func(clienttesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewForbidden(schema.GroupResource{Resource: "secrets"}, "p-copy", errors.New("exceeded quota: secrets"))
	}
	h.react("create", "secrets", refuse)
	h.react("patch", "secrets", refuse)
	if err := h.c.syncer.sync(t.Context(), "ns/p"); err == nil {
		t.Fatal("the sync succeeded, with its create refused")
	}
	for _, w := range h.writes() {
		if strings.HasPrefix(w, "delete") {
			t.Errorf("%s after the new child was refused: the old one is gone", w)
		}
	}
}

// admissionMutatedPolicy makes a ConfigMap of an image (immutable where IMMUTABLE says so,
// recreated where STRATEGY says so).
const admissionMutatedPolicy = `apiVersion: metacel.dev/v1alpha1
kind: CompositePolicy
metadata: {name: colors}
spec:
  parentResource: {apiVersion: e2e.metacel.dev/v1, resource: widgets}
  childResources:
    - {apiVersion: v1, resource: configmaps STRATEGY}
  children:
    - id: cm
      template: {apiVersion: v1, kind: ConfigMap, metadata: {name: "${parent.metadata.name}-cm", labels: {team: a}}, IMMUTABLEdata: {image: "nginx"}}
`

// admittedChild is the desired child as the API server stores it once a mutating webhook pinned
// its image to a digest and upper-cased its team label, in metacel's own write (op: a create,
// Update, or an Apply): metacel's managed fields own what it sent, whatever admission made of it.
func admittedChild(t *testing.T, desired *unstructured.Unstructured, op string, rv int) *unstructured.Unstructured {
	t.Helper()
	c := desired.DeepCopy()
	c.SetUID("c-1")
	c.SetResourceVersion(fmt.Sprint(rv))
	_ = unstructured.SetNestedField(c.Object, "nginx@sha256:abc", "data", "image")
	_ = unstructured.SetNestedField(c.Object, "A", "metadata", "labels", "team")
	labels, annotations := map[string]any{}, map[string]any{}
	for k := range c.GetLabels() {
		labels["f:"+k] = map[string]any{}
	}
	for k := range c.GetAnnotations() {
		annotations["f:"+k] = map[string]any{}
	}
	fields := map[string]any{"f:data": map[string]any{"f:image": map[string]any{}},
		"f:metadata": map[string]any{"f:labels": labels, "f:annotations": annotations}}
	if _, ok := c.Object["immutable"]; ok {
		fields["f:immutable"] = map[string]any{}
	}
	c.Object["metadata"].(map[string]any)["managedFields"] = []any{
		map[string]any{"manager": "metacel", "operation": op, "fieldsType": "FieldsV1", "fieldsV1": fields},
	}
	return c
}

// takeOver is obj after another writer's update of one of the fields metacel set (path, to
// value): the field is that writer's now, and metacel's entry keeps no object left empty by it,
// as an Apply entry keeps none (an Update entry, metacel's create, may keep one: f:data: {}).
func takeOver(obj *unstructured.Unstructured, value string, path ...string) {
	_ = unstructured.SetNestedField(obj.Object, value, path...)
	entry := obj.Object["metadata"].(map[string]any)["managedFields"].([]any)[0].(map[string]any)
	var drop func(fields map[string]any, path []string)
	drop = func(fields map[string]any, path []string) {
		k := "f:" + path[0]
		if len(path) > 1 {
			sub := fields[k].(map[string]any)
			drop(sub, path[1:])
			if len(sub) > 0 {
				return
			}
		}
		delete(fields, k)
	}
	drop(entry["fieldsV1"].(map[string]any), path)
}

// A mutating webhook rewrites a field metacel sets (an image tag pinned to a digest): the stored
// child never holds what the policy says. Each unrelated change of the child (its status, another
// controller's label) brought a sync that re-applied it (a no-op on the server), and the fifth in
// five minutes was reported as a DriftConflict; a field the kind does not let change (an
// immutable ConfigMap's data) was refused as a change of the policy's. Then the answer to a
// write was remembered, by the process: a restarted runtime applied each such child once, and
// recreated a Recreate one. The child itself says it: it carries the content hash of what the
// policy wants, and metacel's managed fields still own the fields admission rewrote; another
// writer's change of one takes the field over, and is reverted.
func TestAFieldAdmissionRewritesIsNoFight(t *testing.T) {
	for _, tc := range []struct {
		name, immutable, strategy string
		restart                   bool                                 // the child is there before the first sync, applied by an earlier process
		change                    func(obj *unstructured.Unstructured) // another writer's, after the child settled
		wantWrites                []string
	}{
		{name: "created, then touched by others", wantWrites: []string{"create configmaps"}},
		{name: "after a restart", restart: true},
		{name: "after a restart, an immutable ConfigMap", immutable: "immutable: true, ", restart: true},
		{name: "after a restart, a Recreate child", strategy: ", updateStrategy: {method: Recreate}", restart: true},
		{name: "another writer changes the field", restart: true, wantWrites: []string{"patch configmaps"},
			change: func(o *unstructured.Unstructured) { takeOver(o, "evil", "data", "image") }},
		{name: "another writer changes a label the policy sets", restart: true, wantWrites: []string{"patch configmaps"},
			change: func(o *unstructured.Unstructured) { takeOver(o, "b", "metadata", "labels", "team") }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			policyText := strings.NewReplacer("IMMUTABLE", tc.immutable, "STRATEGY", tc.strategy).Replace(admissionMutatedPolicy)
			h := newHarness(t, policyText, widgetCRD)
			statusWrites(h, nil)
			w := widgetWithStatus(t, "red", nil)
			w.SetResourceVersion("5")
			h.cacheParent(t, w)
			out, err := render.Render(t.Context(), h.c.policy, render.Input{Parent: w})
			if err != nil || len(out.Children) != 1 {
				t.Fatalf("render: %v", err)
			}
			desired := out.Children[0].Object
			rv := 10
			op := "Update" // created (POST)
			if tc.restart {
				op = "Apply"
				h.cacheChild(t, admittedChild(t, desired, op, rv))
			}
			answer := func(clienttesting.Action) (bool, runtime.Object, error) {
				return true, admittedChild(t, desired, op, rv), nil // admission rewrites it again
			}
			h.react("create", "configmaps", answer)
			h.react("patch", "configmaps", answer)
			for range 7 {
				if err := h.c.syncer.sync(t.Context(), "ns/w"); err != nil {
					t.Fatalf("writes %q: %v", h.writes(), err)
				}
				rv++ // another writer touched the child (its status, a label of its own): a new resourceVersion
				_ = h.c.caches.children[configmapsGVR.String()].Whole().GetIndexer().Update(cached(t, admittedChild(t, desired, op, rv)))
			}
			if tc.change != nil {
				changed := admittedChild(t, desired, op, rv+1)
				tc.change(changed)
				_ = h.c.caches.children[configmapsGVR.String()].Whole().GetIndexer().Update(cached(t, changed))
				if err := h.c.syncer.sync(t.Context(), "ns/w"); err != nil {
					t.Fatal(err)
				}
			}
			var writes []string
			for _, w := range h.writes() {
				if strings.Contains(w, "configmaps") {
					writes = append(writes, w)
				}
			}
			if !slices.Equal(writes, tc.wantWrites) {
				t.Errorf("writes of the child %q, want %q", writes, tc.wantWrites)
			}
		})
	}
}

// A parent whose status says already that its syncs fail for the reason of this one is not
// written again, but still counts as failing in the policy's status: left unmarked, a restarted
// runtime counted it as neither, and rewrote the policy's status over converged parents.
func TestAFailureReportedAlreadyCountsAsFailing(t *testing.T) {
	for _, tc := range []struct {
		name, said string
		writes     int
	}{
		{"the same subject, another detail: not written again", "create ConfigMap ns/w-cm: Internal error occurred: etcdserver: request timed out", 0},
		// the quota that refused another child is fixed; what fails now must be said
		{"another subject: written", "create ConfigMap ns/w-other: exceeded quota", 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, widgetChildPolicy, widgetCRD)
			sent := statusWrites(h, nil)
			h.react("create", "configmaps", func(clienttesting.Action) (bool, runtime.Object, error) {
				return true, nil, apierrors.NewInternalError(errors.New("etcdserver: leader changed"))
			})
			w := widgetWithStatus(t, "red", map[string]any{"conditions": []any{
				map[string]any{"type": "Synced", "status": "False", "reason": contract.ReasonApplyFailed, "message": tc.said, "observedGeneration": int64(1)},
			}})
			h.cacheParent(t, w)
			if err := h.c.syncer.sync(t.Context(), "ns/w"); err == nil || isTerminal(err) {
				t.Fatalf("sync: %v, want a retried failure", err)
			}
			if len(*sent) != tc.writes {
				t.Errorf("%d status writes, want %d", len(*sent), tc.writes)
			}
			if c := h.c.Parents().Count(); c.Failing != 1 {
				t.Errorf("counts %+v, want the parent failing", c)
			}
		})
	}
}

// A child the API server refuses for good (an immutable ConfigMap's data changed) and another whose
// create gets a 500: the sync is retried for the second, not left for an input to change.
func TestARefusedChildDoesNotMakeAnotherOnesPassingFailureFinal(t *testing.T) {
	h := newHarness(t, twoChildrenPolicy, widgetCRD)
	statusWrites(h, nil)
	w := widgetWithStatus(t, "blue", nil)
	w.SetResourceVersion("5")
	h.cacheParent(t, w)
	h.react("patch", "configmaps", func(clienttesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewInvalid(schema.GroupKind{Kind: "ConfigMap"}, "w-a", nil)
	})
	h.react("create", "configmaps", func(clienttesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewInternalError(errors.New("etcdserver: leader changed"))
	})
	h.cacheChild(t, objectFrom(t, `{apiVersion: v1, kind: ConfigMap, metadata: {name: w-a, namespace: ns, uid: c-a, resourceVersion: "9",
  ownerReferences: [{apiVersion: e2e.metacel.dev/v1, kind: Widget, name: w, uid: w-1, controller: true}],
  labels: {app.kubernetes.io/managed-by: metacel, metacel.dev/policy: colors, metacel.dev/parent-uid: w-1, metacel.dev/child-id: a}, `+appliedByMetacel+`},
  data: {replicas: "7"}}`))
	err := h.c.syncer.sync(t.Context(), "ns/w")
	if err == nil || isTerminal(err) {
		t.Errorf("sync: %v (terminal %v), want a retried failure: child b's create may pass", err, isTerminal(err))
	}
}

// What a failure is about, the words before the first ": " of each line of its message: a
// retried failure whose subjects are those the status says already is not written again.
func TestTheSubjectsOfAFailure(t *testing.T) {
	tests := []struct {
		name, said, now string
		same            bool
	}{
		{"another detail of one subject", "create ConfigMap ns/a: etcdserver: request timed out", "create ConfigMap ns/a: etcdserver: leader changed", true},
		{"another subject", "create ConfigMap ns/a: exceeded quota", "create ConfigMap ns/b: exceeded quota", false},
		// the failures of several children, joined: a new one is news
		{"a second child's failure joins", "create ConfigMap ns/a: timed out", "create ConfigMap ns/a: leader changed\ncreate Secret ns/b: exceeded quota", false},
		{"the same children, in another order", "create Secret ns/b: x\ncreate ConfigMap ns/a: y", "create ConfigMap ns/a: z\ncreate Secret ns/b: w", true},
		// a count that moves is no subject of its own
		{"a child that keeps disappearing, counted again", fightError(&render.Child{Object: objectFrom(t, `{apiVersion: v1, kind: ConfigMap, metadata: {name: x, namespace: ns}}`)}, nil, 5).Error(),
			fightError(&render.Child{Object: objectFrom(t, `{apiVersion: v1, kind: ConfigMap, metadata: {name: x, namespace: ns}}`)}, nil, 6).Error(), true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := subjects(tc.said) == subjects(tc.now); got != tc.same {
				t.Errorf("the same subjects: %v, want %v (%q, %q)", got, tc.same, subjects(tc.said), subjects(tc.now))
			}
		})
	}
}
