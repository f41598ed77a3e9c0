package controller

import (
	"context"
	"slices"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"

	"metacel.dev/metacel/runtime/apply"
	"metacel.dev/metacel/runtime/hashslot"
	"metacel.dev/metacel/runtime/ledger"
	"metacel.dev/metacel/test/testpolicies"
)

var (
	secretsGVR    = schema.GroupVersionResource{Version: "v1", Resource: "secrets"}
	configmapsGVR = schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}
)

// secretsPolicy is policy "copy": ConfigMap parents, Secret children updated in place, with the
// given children.
func secretsPolicy(children string) string { return secretsPolicyBy("InPlace", children) }

// secretsPolicyBy is policy "copy" (testpolicies' copy-secret) whose Secret children are updated by
// method, with the given children.
func secretsPolicyBy(method, children string) string {
	return testpolicies.YAML("copy-secret", testpolicies.Fills{"METHOD": method}) + children
}

// secretChild is a child entry "copy": a Secret named after the parent, with the given fields.
func secretChild(fields string) string {
	return `  children:
    - id: copy
      template:
        apiVersion: v1
        kind: Secret
        metadata: {name: "${parent.metadata.name}-copy"}
        ` + fields + "\n"
}

// noChildrenPolicy lists secrets as a child resource but has no entry any more.
var noChildrenPolicy = secretsPolicy("")

func TestARemovedEntrysChildFollowsTheDeletionPolicyItRecords(t *testing.T) {
	tests := []struct {
		name       string
		annotation string
		labels     string // that name its policy
		want       string // the write that removes it
	}{
		{"an Orphan child is released", `annotations: {metacel.dev/deletion-policy: Orphan},`, `metacel.dev/policy: copy`, "patch secrets"},
		{"a child without the record is deleted", ``, `metacel.dev/policy: copy`, "delete secrets"},
		{"a child a later runtime labelled (the new key alone) is deleted", ``, `metacel.dev/policy-name: copy`, "delete secrets"},
		{"a child this runtime labelled (both keys) is deleted", ``, `metacel.dev/policy-name: copy, metacel.dev/policy: copy`, "delete secrets"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, noChildrenPolicy)
			h.cacheParent(t, objectFrom(t, `{apiVersion: v1, kind: ConfigMap, metadata: {name: p, namespace: ns, uid: p-1}}`))
			child := objectFrom(t, `{apiVersion: v1, kind: Secret, metadata: {name: p-copy, namespace: ns, uid: s-1, `+tc.annotation+`
  ownerReferences: [{apiVersion: v1, kind: ConfigMap, name: p, uid: p-1, controller: true}],
  labels: {app.kubernetes.io/managed-by: metacel, `+tc.labels+`, metacel.dev/parent-uid: p-1, metacel.dev/child-id: copy}, `+appliedByMetacel+`}}`)
			h.store(t, secretsGVR, child)
			h.cacheChild(t, child)
			if err := h.c.syncer.sync(t.Context(), "ns/p"); err != nil {
				t.Fatal(err)
			}
			if w := h.writes(); !slices.Contains(w, tc.want) || len(w) != 1 {
				t.Errorf("writes %v, want [%s]", w, tc.want)
			}
		})
	}
}

// configMapChildPolicy has configmaps as its only child resource: secrets were dropped.
const configMapChildPolicy = `apiVersion: metacel.dev/v1alpha1
kind: CompositePolicy
metadata: {name: copy}
spec:
  parentResource: {apiVersion: v1, resource: namespaces}
  childResources:
    - {apiVersion: v1, resource: configmaps}
`

func TestADroppedResourcesChildrenAreRemovedAfterARestart(t *testing.T) {
	h := newHarness(t, configMapChildPolicy)
	// what the ledger says an earlier version had; the runtime restarted: no previous version
	if err := h.c.deps.Ledger.RecordChildResources(t.Context(), "copy", []schema.GroupVersionResource{secretsGVR, configmapsGVR}); err != nil {
		t.Fatal(err)
	}
	h.store(t, secretsGVR, objectFrom(t, `{apiVersion: v1, kind: Secret, metadata: {name: kept, namespace: ns, uid: s-1,
  annotations: {metacel.dev/deletion-policy: Orphan},
  labels: {app.kubernetes.io/managed-by: metacel, metacel.dev/policy: copy, metacel.dev/parent-uid: p-1, metacel.dev/child-id: old}, `+appliedByMetacel+`}}`))
	// one child an earlier runtime labelled (the legacy key alone), one a later runtime did (the new key alone)
	h.store(t, secretsGVR, objectFrom(t, `{apiVersion: v1, kind: Secret, metadata: {name: gone, namespace: ns, uid: s-2,
  labels: {app.kubernetes.io/managed-by: metacel, metacel.dev/policy-name: copy, metacel.dev/parent-uid: p-1, metacel.dev/child-id: old}, `+appliedByMetacel+`}}`))
	h.c.cleanup.pruneDropped(t.Context())
	if w := strings.Join(h.writes(), ","); w != "patch secrets,delete secrets" && w != "delete secrets,patch secrets" {
		t.Errorf("writes %s, want the Orphan child released and the other deleted", w)
	}
	got, err := h.c.deps.Ledger.ChildResources(t.Context(), "copy")
	if err != nil || len(got) != 1 || got[0] != configmapsGVR {
		t.Errorf("ledger %v (%v), want only configmaps once the dropped children are gone", got, err)
	}
	if h.c.cleanup.dropped.Load() {
		t.Error("nothing is left to prune")
	}
}

var (
	hpasV1GVR = schema.GroupVersionResource{Group: "autoscaling", Version: "v1", Resource: "horizontalpodautoscalers"}
	hpasV2GVR = schema.GroupVersionResource{Group: "autoscaling", Version: "v2", Resource: "horizontalpodautoscalers"}
)

// A policy that moves a child resource to another version of it (autoscaling/v1 to v2, a CRD's
// v1beta1 to v1) lists the same objects: its children are not a dropped resource's, and stay.
func TestAChildResourceMovedToAnotherVersionIsNotDropped(t *testing.T) {
	h := newHarness(t, `apiVersion: metacel.dev/v1alpha1
kind: CompositePolicy
metadata: {name: copy}
spec:
  parentResource: {apiVersion: v1, resource: namespaces}
  childResources:
    - {apiVersion: autoscaling/v2, resource: horizontalpodautoscalers}
`)
	if err := h.c.deps.Ledger.RecordChildResources(t.Context(), "copy", []schema.GroupVersionResource{hpasV1GVR}); err != nil {
		t.Fatal(err)
	}
	h.store(t, hpasV1GVR, objectFrom(t, `{apiVersion: autoscaling/v1, kind: HorizontalPodAutoscaler, metadata: {name: web, namespace: ns, uid: h-1,
  labels: {app.kubernetes.io/managed-by: metacel, metacel.dev/policy-name: copy, metacel.dev/parent-uid: p-1, metacel.dev/child-id: hpa}, `+appliedByMetacel+`}}`))
	h.c.cleanup.pruneDropped(t.Context())
	if w := h.writes(); len(w) != 0 {
		t.Errorf("writes %v, want none: the child is the policy's still", w)
	}
	got, err := h.c.deps.Ledger.ChildResources(t.Context(), "copy")
	if err != nil || len(got) != 1 || got[0] != hpasV2GVR {
		t.Errorf("ledger %v (%v), want the resource in its new version only", got, err)
	}
}

func TestAPolicyRecordsItsResourcesBeforeItsWorkersStart(t *testing.T) {
	h := newHarness(t, copyPolicy)
	h.c.cleanup.pruneDropped(t.Context())
	got, _ := h.c.deps.Ledger.ChildResources(t.Context(), "copy")
	if len(got) != 1 || got[0] != secretsGVR {
		t.Errorf("ledger %v, want secrets", got)
	}
	if _, err := h.kube.CoordinationV1().Leases("metacel-system").Get(t.Context(), ledger.LeaseName("copy"), metav1.GetOptions{}); err != nil {
		t.Errorf("the ledger's Lease: %v", err)
	}
}

const selectingPolicy = `apiVersion: metacel.dev/v1alpha1
kind: CompositePolicy
metadata: {name: copy}
spec:
  parentResource:
    apiVersion: v1
    resource: configmaps
    labelSelector: {matchLabels: {role: parent}, matchExpressions: [{key: tier, operator: In, values: [a, b]}]}
  childResources:
    - {apiVersion: v1, resource: secrets}
`

func TestParentsOutOfTheSelectorAreLetGoOfAtStart(t *testing.T) {
	h := newHarness(t, selectingPolicy)
	parent := func(name, labels, finalizers string) {
		h.store(t, configmapsGVR, objectFrom(t, `{apiVersion: v1, kind: ConfigMap, metadata: {name: `+name+`, namespace: ns, uid: `+name+`, labels: `+labels+`, finalizers: `+finalizers+`}}`))
	}
	parent("matching", `{role: parent, tier: a}`, `[metacel.dev/cleanup]`)
	parent("relabelled", `{role: other, tier: a}`, `[metacel.dev/cleanup]`)
	parent("other-tier", `{role: parent, tier: c}`, `[metacel.dev/cleanup, example.com/keep]`)
	parent("never-ours", `{role: other}`, `[]`)
	h.c.cleanup.letGoOfParentsOutOfSelector(t.Context())
	var patched []string
	for _, a := range h.client.Actions() {
		if a.GetVerb() == "patch" {
			patched = append(patched, a.(interface{ GetName() string }).GetName())
		}
	}
	slices.Sort(patched)
	if strings.Join(patched, ",") != "other-tier,relabelled" {
		t.Errorf("let go of %v, want other-tier and relabelled", patched)
	}
}

// farPolicy writes its child into the namespace of the parent's data.ns: it cannot be owned, and
// the parent's finalizer cleans it up.
var farPolicy = testpolicies.YAML("farcopy", testpolicies.Fills{"NAMESPACES": `["*"]`})

func TestADeletedParentIsFinalizedOnceItsChildrenAreGone(t *testing.T) {
	h := newHarness(t, farPolicy)
	parent := objectFrom(t, `{apiVersion: v1, kind: ConfigMap, metadata: {name: p, namespace: ns, uid: p-1, deletionTimestamp: "2026-11-23T12:00:00Z", finalizers: [metacel.dev/cleanup]}, data: {ns: far}}`)
	h.store(t, configmapsGVR, parent)
	h.cacheParent(t, parent)
	child := objectFrom(t, `{apiVersion: v1, kind: Secret, metadata: {name: p-copy, namespace: far, uid: s-1,
  labels: {app.kubernetes.io/managed-by: metacel, metacel.dev/policy: copy, metacel.dev/parent-uid: p-1, metacel.dev/child-id: copy}, `+appliedByMetacel+`}}`)
	h.store(t, secretsGVR, child)
	h.cacheChild(t, child)

	if err := h.c.syncer.sync(t.Context(), "ns/p"); err != nil {
		t.Fatal(err)
	}
	if w := strings.Join(h.writes(), ","); w != "delete secrets" {
		t.Fatalf("first sync wrote %s, want the child deleted and the finalizer kept", w)
	}
	// the child is gone (from the cache too): the parent is finalized
	if err := h.c.caches.children[secretsGVR.String()].Whole().GetIndexer().Delete(child); err != nil {
		t.Fatal(err)
	}
	h.client.ClearActions()
	if err := h.c.syncer.sync(t.Context(), "ns/p"); err != nil {
		t.Fatal(err)
	}
	if w := strings.Join(h.writes(), ","); w != "patch configmaps" {
		t.Errorf("second sync wrote %s, want the finalizer removed", w)
	}
}

// TestADeletedParentsChildNotCachedYetIsFoundWhicheverKeyNamesItsPolicy checks the finalizer's
// read of the API server (a child the cache has not seen yet) for children labelled by an earlier
// runtime (the legacy key alone), this one (both keys) and a later one (the new key alone).
func TestADeletedParentsChildNotCachedYetIsFoundWhicheverKeyNamesItsPolicy(t *testing.T) {
	for _, tc := range []struct {
		name, labels string
		want         string // the writes of one sync
	}{
		{"labelled by an earlier runtime: deleted, and waited for", `metacel.dev/policy: copy`, "delete secrets"},
		{"labelled by this runtime: deleted, and waited for", `metacel.dev/policy-name: copy, metacel.dev/policy: copy`, "delete secrets"},
		{"labelled by a later runtime: deleted, and waited for", `metacel.dev/policy-name: copy`, "delete secrets"},
		{"another policy's by the new key: the parent is finalized past it", `metacel.dev/policy-name: other, metacel.dev/policy: copy`, "patch configmaps"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, farPolicy)
			parent := objectFrom(t, `{apiVersion: v1, kind: ConfigMap, metadata: {name: p, namespace: ns, uid: p-1, deletionTimestamp: "2026-11-23T12:00:00Z", finalizers: [metacel.dev/cleanup]}, data: {ns: far}}`)
			h.store(t, configmapsGVR, parent)
			h.cacheParent(t, parent)
			h.store(t, secretsGVR, objectFrom(t, `{apiVersion: v1, kind: Secret, metadata: {name: p-copy, namespace: far, uid: s-1,
  labels: {app.kubernetes.io/managed-by: metacel, `+tc.labels+`, metacel.dev/parent-uid: p-1, metacel.dev/child-id: copy}, `+appliedByMetacel+`}}`))
			if err := h.c.syncer.sync(t.Context(), "ns/p"); err != nil {
				t.Fatal(err)
			}
			if w := strings.Join(h.writes(), ","); w != tc.want {
				t.Errorf("writes %s, want %s", w, tc.want)
			}
		})
	}
}

// slotsOfDeletes wraps a dynamic client: the slot each delete's context says it writes for
// (hashslot.WithSlot; -1: none), which the write fence of a sharded replica judges.
type slotsOfDeletes struct {
	dynamic.Interface
	slots *[]int
}

func (c slotsOfDeletes) Resource(gvr schema.GroupVersionResource) dynamic.NamespaceableResourceInterface {
	return slotsOfResource{c.Interface.Resource(gvr), c.slots}
}

type slotsOfResource struct {
	dynamic.NamespaceableResourceInterface
	slots *[]int
}

func (r slotsOfResource) Namespace(ns string) dynamic.ResourceInterface {
	return slotsOfNamespaced{r.NamespaceableResourceInterface.Namespace(ns), r.slots}
}

type slotsOfNamespaced struct {
	dynamic.ResourceInterface
	slots *[]int
}

func (r slotsOfNamespaced) Delete(ctx context.Context, name string, opts metav1.DeleteOptions, sub ...string) error {
	slot, ok := hashslot.SlotFrom(ctx)
	if !ok {
		slot = -1
	}
	*r.slots = append(*r.slots, slot)
	return r.ResourceInterface.Delete(ctx, name, opts, sub...)
}

// With sharding, the children of a dropped resource are deleted each with its parent's slot in
// the request's context, so that the write fence refuses the delete once the slot has moved to
// another replica, as it refuses a sync's writes: they went unfenced.
func TestADroppedResourcesChildIsDeletedUnderItsParentsSlot(t *testing.T) {
	h := newHarness(t, configMapChildPolicy)
	var slots []int
	h.c.deps.Writer = apply.NewWriter(slotsOfDeletes{h.client, &slots})
	h.c.share.sharded.Store(true)
	h.c.share.setSlots(hashslot.Set(^uint64(0))) // every slot
	if err := h.c.deps.Ledger.RecordChildResources(t.Context(), "copy", []schema.GroupVersionResource{secretsGVR, configmapsGVR}); err != nil {
		t.Fatal(err)
	}
	h.store(t, secretsGVR, objectFrom(t, `{apiVersion: v1, kind: Secret, metadata: {name: gone, namespace: ns, uid: s-2,
  labels: {app.kubernetes.io/managed-by: metacel, metacel.dev/policy-name: copy, metacel.dev/parent-uid: p-1, metacel.dev/child-id: old}, `+appliedByMetacel+`}}`))
	h.c.cleanup.pruneDropped(t.Context())
	if want := hashslot.Of("p-1"); len(slots) != 1 || slots[0] != want {
		t.Errorf("deletes for slots %v, want one for the parent's slot %d", slots, want)
	}
}
