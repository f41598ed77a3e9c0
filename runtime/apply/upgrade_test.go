package apply

import (
	"context"
	"encoding/json"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic/fake"
	clienttesting "k8s.io/client-go/testing"
)

var configMapsGVR = schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}

// createdConfigMap is a ConfigMap as metacel's POST leaves it, with other managers' entries.
func createdConfigMap(rv string, entries ...metav1.ManagedFieldsEntry) *unstructured.Unstructured {
	cm := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "v1", "kind": "ConfigMap",
		"metadata": map[string]any{"name": "app", "namespace": "ns"},
		"data":     map[string]any{"A": "1"},
	}}
	cm.SetResourceVersion(rv)
	cm.SetManagedFields(entries)
	return cm
}

func entry(manager string, op metav1.ManagedFieldsOperationType, subresource string) metav1.ManagedFieldsEntry {
	return metav1.ManagedFieldsEntry{Manager: manager, Operation: op, Subresource: subresource, APIVersion: "v1",
		FieldsType: "FieldsV1", FieldsV1: metav1.NewFieldsV1(`{"f:data":{"f:A":{}}}`)}
}

func TestAnUpgradeInPlaceTurnsMetacelsOneUpdateEntryIntoItsApplyEntry(t *testing.T) {
	update, apply := metav1.ManagedFieldsOperationUpdate, metav1.ManagedFieldsOperationApply
	for _, tc := range []struct {
		name string
		obj  *unstructured.Unstructured
		want string // the patch; "" when there is none
	}{
		{"metacel's entry after others'", createdConfigMap("7", entry("kubectl", update, ""), entry(FieldManager, update, "")),
			`[{"op":"test","path":"/metadata/resourceVersion","value":"7"},{"op":"test","path":"/metadata/managedFields/1/manager","value":"metacel"},{"op":"test","path":"/metadata/managedFields/1/operation","value":"Update"},{"op":"replace","path":"/metadata/managedFields/1/operation","value":"Apply"}]`},
		{"an Apply entry already: csaupgrade merges the two", createdConfigMap("7", entry(FieldManager, update, ""), entry(FieldManager, apply, "")), ""},
		{"an entry on a subresource", createdConfigMap("7", entry(FieldManager, update, "status")), ""},
		{"no entry of metacel's", createdConfigMap("7", entry("kubectl", update, "")), ""},
		{"no resourceVersion to test", createdConfigMap("", entry(FieldManager, update, "")), ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			patch, ok := upgradeInPlacePatch(tc.obj)
			if got := string(patch); ok != (tc.want != "") || got != tc.want {
				t.Errorf("patch %q (ok %v), want %q", got, ok, tc.want)
			}
		})
	}
}

func TestUpgradeToApplyReadsOnlyWhenTheCacheIsBehind(t *testing.T) {
	for _, tc := range []struct {
		name      string
		cachedRV  string
		wantVerbs []string
	}{
		{"the cached object is the stored one: one patch, no read", "", []string{"patch"}},
		{"the cached object is behind: the patch fails its test, then read and patch", "1", []string{"patch", "get", "patch"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			stored := createdConfigMap("5", entry("kubectl", metav1.ManagedFieldsOperationUpdate, ""), entry(FieldManager, metav1.ManagedFieldsOperationUpdate, ""))
			client := fake.NewSimpleDynamicClient(runtime.NewScheme(), stored)
			live, err := client.Resource(configMapsGVR).Namespace("ns").Get(context.Background(), "app", metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			cached := live.DeepCopy()
			if tc.cachedRV != "" {
				cached.SetResourceVersion(tc.cachedRV)
			}
			client.ClearActions()

			if err := NewWriter(client).UpgradeToApply(context.Background(), configMapsGVR, cached); err != nil {
				t.Fatal(err)
			}

			var verbs []string
			for _, a := range client.Actions() {
				verbs = append(verbs, a.GetVerb())
				if p, ok := a.(clienttesting.PatchAction); ok && p.GetPatchType() != types.JSONPatchType {
					t.Errorf("a %s patch, want a JSON patch", p.GetPatchType())
				}
			}
			if got, want := fmtJSON(verbs), fmtJSON(tc.wantVerbs); got != want {
				t.Errorf("requests %s, want %s", got, want)
			}
			upgraded, err := client.Resource(configMapsGVR).Namespace("ns").Get(context.Background(), "app", metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if !CreatedNotApplied(cached) || CreatedNotApplied(upgraded) {
				t.Errorf("created, not applied: before %v, after %v; want true, false", CreatedNotApplied(cached), CreatedNotApplied(upgraded))
			}
			if _, applied := managedByOp(upgraded, FieldManager, metav1.ManagedFieldsOperationApply); !applied {
				t.Errorf("no Apply entry of metacel's after the upgrade: %v", upgraded.GetManagedFields())
			}
		})
	}
}

func fmtJSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

func TestApplyMovesTheFieldsMetacelCreatedBeforeItFirstApplies(t *testing.T) {
	update, apply := metav1.ManagedFieldsOperationUpdate, metav1.ManagedFieldsOperationApply
	for _, tc := range []struct {
		name      string
		observed  *unstructured.Unstructured
		wantPatch []types.PatchType
	}{
		{"created by metacel, never applied: its fields moved, then applied", createdConfigMap("5", entry(FieldManager, update, "")),
			[]types.PatchType{types.JSONPatchType, types.ApplyPatchType}},
		{"applied by metacel before: applied", createdConfigMap("5", entry(FieldManager, apply, "")), []types.PatchType{types.ApplyPatchType}},
		{"not known: applied", nil, []types.PatchType{types.ApplyPatchType}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			stored := createdConfigMap("5", entry(FieldManager, update, ""))
			client := fake.NewSimpleDynamicClient(runtime.NewScheme(), stored)
			client.PrependReactor("patch", "configmaps", func(a clienttesting.Action) (bool, runtime.Object, error) {
				if a.(clienttesting.PatchAction).GetPatchType() != types.ApplyPatchType {
					return false, nil, nil
				}
				return true, stored, nil
			})
			client.ClearActions()

			desired := createdConfigMap("")
			if _, err := NewWriter(client).Apply(context.Background(), configMapsGVR, desired, tc.observed); err != nil {
				t.Fatal(err)
			}

			var got []types.PatchType
			for _, a := range client.Actions() {
				if p, ok := a.(clienttesting.PatchAction); ok {
					got = append(got, p.GetPatchType())
				}
			}
			if fmtJSON(got) != fmtJSON(tc.wantPatch) {
				t.Errorf("patches %s, want %s", fmtJSON(got), fmtJSON(tc.wantPatch))
			}
		})
	}
}
