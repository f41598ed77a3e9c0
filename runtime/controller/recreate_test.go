package controller

import (
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	clienttesting "k8s.io/client-go/testing"

	"metacel.dev/metacel/runtime/contract"
)

// A Recreate child that the API server removes at once is created anew in the same sync (one
// pass, not two); one that something holds (a finalizer, a Pod's grace period on its node) is
// created by the sync its deletion causes.
func TestARecreatedChildGoneAtOnceIsCreatedInTheSameSync(t *testing.T) {
	tests := []struct {
		name       string
		finalizers string
		want       string
	}{
		{"nothing holds it: deleted and created", "[]", "delete secrets,create secrets"},
		{"a finalizer holds it: deleted only", "[example.com/hold]", "delete secrets"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t, recreatePolicy)
			h.cacheParent(t, objectFrom(t, `{apiVersion: v1, kind: ConfigMap, metadata: {name: p, namespace: ns, uid: p-1, resourceVersion: "2"}, data: {a: "new"}}`))
			old := objectFrom(t, `{apiVersion: v1, kind: Secret, metadata: {name: p-copy, namespace: ns, uid: s-1, resourceVersion: "3", finalizers: `+tt.finalizers+`,
  ownerReferences: [{apiVersion: v1, kind: ConfigMap, name: p, uid: p-1, controller: true, blockOwnerDeletion: true}],
  labels: {app.kubernetes.io/managed-by: metacel, metacel.dev/policy: copy, metacel.dev/parent-uid: p-1, metacel.dev/child-id: copy},
  `+appliedByMetacel+`}, type: "old"}`)
			h.cacheChild(t, old)
			h.react("delete", "secrets", func(clienttesting.Action) (bool, runtime.Object, error) { return true, nil, nil })
			h.react("create", "secrets", func(a clienttesting.Action) (bool, runtime.Object, error) {
				return true, a.(clienttesting.CreateAction).GetObject().(*unstructured.Unstructured), nil
			})
			if err := h.c.syncer.sync(t.Context(), "ns/p"); err != nil {
				t.Fatal(err)
			}
			if got := strings.Join(h.writes(), ","); got != tt.want {
				t.Errorf("writes %s, want %s", got, tt.want)
			}
		})
	}
}

func TestGoneAtOnce(t *testing.T) {
	tests := []struct {
		name, obj string
		want      bool
	}{
		{"a Secret", `{apiVersion: v1, kind: Secret, metadata: {name: s}}`, true},
		{"a Pod not bound to a node", `{apiVersion: v1, kind: Pod, metadata: {name: p}, spec: {}}`, true},
		{"a Pod on a node (grace period)", `{apiVersion: v1, kind: Pod, metadata: {name: p}, spec: {nodeName: node-1}}`, false},
		{"an object with a finalizer", `{apiVersion: v1, kind: Secret, metadata: {name: s, finalizers: [x]}}`, false},
	}
	for _, tt := range tests {
		if got := goneAtOnce(objectFrom(t, tt.obj)); got != tt.want {
			t.Errorf("%s: %v, want %v", tt.name, got, tt.want)
		}
	}
}

// A child missing from the cache whose create finds it already there (the cache had not seen
// it yet: typically the parent's previous sync created it) is written as a child in the cache
// would be: not at all when it holds what the policy renders, else as its update method says.
// Before, it was always applied (a read, a patch of its managed fields, an apply), and a sync
// that then saw it between the two writes recreated a Pod just created.
func TestAChildCreatedBeforeTheCacheSawItIsWrittenOnlyWhenItDiffers(t *testing.T) {
	tests := []struct {
		name, method, existingType, want string
	}{
		{"up to date: no write", "InPlace", "new", "create secrets"},
		{"up to date, Recreate: no write", "Recreate", "new", "create secrets"},
		{"differs, InPlace: applied", "InPlace", "old", "create secrets,patch secrets,patch secrets"},
		{"differs, Recreate: recreated", "Recreate", "old", "create secrets,delete secrets,create secrets"},
		{"differs, OnDelete: left alone", "OnDelete", "old", "create secrets"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t, secretsPolicyBy(tt.method, secretChild(`type: "${parent.data.a}"`)))
			h.cacheParent(t, objectFrom(t, `{apiVersion: v1, kind: ConfigMap, metadata: {name: p, namespace: ns, uid: p-1, resourceVersion: "2"}, data: {a: "new"}}`))
			creates := 0
			h.react("create", "secrets", func(a clienttesting.Action) (bool, runtime.Object, error) {
				sent := a.(clienttesting.CreateAction).GetObject().(*unstructured.Unstructured)
				if creates++; creates > 1 {
					return true, sent, nil // the recreate's create
				}
				existing := sent.DeepCopy() // what the parent's previous sync created
				existing.SetUID("s-1")
				existing.SetResourceVersion("3")
				existing.Object["type"] = tt.existingType
				if tt.existingType != "new" { // created by a sync of another content, which its hash says
					existing.SetAnnotations(map[string]string{contract.AnnotationContentHash: "hash-of-" + tt.existingType})
				}
				existing.Object["metadata"].(map[string]any)["managedFields"] = []any{map[string]any{
					"manager": "metacel", "operation": "Update", "fieldsType": "FieldsV1", "fieldsV1": map[string]any{"f:type": map[string]any{}}}}
				h.react("get", "secrets", func(clienttesting.Action) (bool, runtime.Object, error) { return true, existing, nil })
				return true, nil, apierrors.NewAlreadyExists(schema.GroupResource{Resource: "secrets"}, sent.GetName())
			})
			h.react("delete", "secrets", func(clienttesting.Action) (bool, runtime.Object, error) { return true, nil, nil })
			h.react("patch", "secrets", func(a clienttesting.Action) (bool, runtime.Object, error) {
				return true, objectFrom(t, `{apiVersion: v1, kind: Secret, metadata: {name: p-copy, namespace: ns, uid: s-1, resourceVersion: "4",
  ownerReferences: [{apiVersion: v1, kind: ConfigMap, name: p, uid: p-1, controller: true}]}}`), nil
			})
			if err := h.c.syncer.sync(t.Context(), "ns/p"); err != nil {
				t.Fatal(err)
			}
			if got := strings.Join(h.writes(), ","); got != tt.want {
				t.Errorf("writes %s, want %s", got, tt.want)
			}
		})
	}
}
