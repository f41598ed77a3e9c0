package controller

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	clienttesting "k8s.io/client-go/testing"

	"metacel.dev/metacel/runtime/contract"
)

var widgetsGVR = schema.GroupVersionResource{Group: "e2e.metacel.dev", Version: "v1", Resource: "widgets"}

const widgetCRD = "../../test/e2e/testdata/crds/widget.yaml"

const widgetStatusPolicy = `apiVersion: metacel.dev/v1alpha1
kind: CompositePolicy
metadata: {name: colors}
spec:
  parentResource: {apiVersion: e2e.metacel.dev/v1, resource: widgets}
  validations:
    - expression: "parent.spec.color != 'black'"
      message: "no black widgets"
  status:
    color: "${parent.spec.color}"
`

// statusWrites records the status applies a harness's client receives, and answers them with err.
func statusWrites(h *harness, err error) *[]map[string]any {
	var sent []map[string]any
	h.react("patch", "widgets", func(a clienttesting.Action) (bool, runtime.Object, error) {
		if a.GetSubresource() != "status" {
			return false, nil, nil
		}
		var obj map[string]any
		_ = json.Unmarshal(a.(clienttesting.PatchAction).GetPatch(), &obj)
		status, _ := obj["status"].(map[string]any)
		sent = append(sent, status)
		if err != nil {
			return true, nil, err
		}
		return true, &unstructured.Unstructured{Object: obj}, nil
	})
	return &sent
}

// widgetWithStatus is a Widget whose status metacel wrote (status, owning its fields), with another
// writer's field status.extra beside it.
func widgetWithStatus(t *testing.T, color string, status map[string]any) *unstructured.Unstructured {
	w := objectFrom(t, `{apiVersion: e2e.metacel.dev/v1, kind: Widget, metadata: {name: w, namespace: ns, uid: w-1, generation: 1}, spec: {color: `+color+`}}`)
	if status == nil {
		return w
	}
	owned := map[string]any{}
	for k := range status {
		owned["f:"+k] = map[string]any{}
	}
	full := runtime.DeepCopyJSON(status)
	full["extra"] = "another writer's"
	w.Object["status"] = full
	mine, _ := json.Marshal(map[string]any{"f:status": owned})
	w.Object["metadata"].(map[string]any)["managedFields"] = []any{
		map[string]any{"manager": "metacel", "operation": "Apply", "subresource": "status", "fieldsType": "FieldsV1", "fieldsV1": json.RawMessage(mine)},
		map[string]any{"manager": "other", "operation": "Update", "subresource": "status", "fieldsType": "FieldsV1", "fieldsV1": map[string]any{"f:status": map[string]any{"f:extra": map[string]any{}}}},
	}
	// as the API server returns it: managedFields' fieldsV1 are plain JSON objects
	data, _ := json.Marshal(w.Object)
	w.Object = nil
	_ = json.Unmarshal(data, &w.Object)
	return w
}

func TestStatusIsMetacelsShareOnly(t *testing.T) {
	// what metacel writes for a red Widget, the first time
	first := newHarness(t, widgetStatusPolicy, widgetCRD)
	sent := statusWrites(first, nil)
	first.cacheParent(t, widgetWithStatus(t, "red", nil))
	if err := first.c.syncer.sync(t.Context(), "ns/w"); err != nil || len(*sent) != 1 {
		t.Fatalf("first sync: %v, %d status writes", err, len(*sent))
	}
	written := (*sent)[0]

	t.Run("another writer's field causes no write", func(t *testing.T) {
		h := newHarness(t, widgetStatusPolicy, widgetCRD)
		sent := statusWrites(h, nil)
		h.cacheParent(t, widgetWithStatus(t, "red", written))
		if err := h.c.syncer.sync(t.Context(), "ns/w"); err != nil || len(*sent) != 0 {
			t.Errorf("sync: %v, status writes %v, want none", err, *sent)
		}
	})
	t.Run("a status already as metacel would write it causes no write, whoever wrote it", func(t *testing.T) {
		h := newHarness(t, widgetStatusPolicy, widgetCRD)
		sent := statusWrites(h, nil)
		w := widgetWithStatus(t, "red", nil)
		w.Object["status"] = runtime.DeepCopyJSON(written)
		h.cacheParent(t, w)
		if err := h.c.syncer.sync(t.Context(), "ns/w"); err != nil || len(*sent) != 0 {
			t.Errorf("sync: %v, status writes %v, want none", err, *sent)
		}
	})
	t.Run("a failed sync re-applies only metacel's fields", func(t *testing.T) {
		h := newHarness(t, widgetStatusPolicy, widgetCRD)
		sent := statusWrites(h, nil)
		h.cacheParent(t, widgetWithStatus(t, "black", written))
		_ = h.c.syncer.sync(t.Context(), "ns/w")
		if len(*sent) != 1 {
			t.Fatalf("status writes %v, want one", *sent)
		}
		if _, ok := (*sent)[0]["extra"]; ok || (*sent)[0]["color"] != "red" {
			t.Errorf("status written %v: want metacel's color kept and no other writer's field", (*sent)[0])
		}
	})
	t.Run("a status the schema refuses is sent once", func(t *testing.T) {
		h := newHarness(t, widgetStatusPolicy, widgetCRD)
		sent := statusWrites(h, apierrors.NewInvalid(schema.GroupKind{Group: "e2e.metacel.dev", Kind: "Widget"}, "w", nil))
		h.cacheParent(t, widgetWithStatus(t, "red", nil))
		for range 3 {
			_ = h.c.syncer.sync(t.Context(), "ns/w")
		}
		if len(*sent) != 1 {
			t.Errorf("%d status writes, want 1", len(*sent))
		}
		events := 0
		for len(h.recorder.Events) > 0 {
			if strings.Contains(<-h.recorder.Events, contract.ReasonStatusFailed) {
				events++
			}
		}
		if events != 1 {
			t.Errorf("%d StatusFailed events, want 1", events)
		}
	})
}

const widgetChildPolicy = `apiVersion: metacel.dev/v1alpha1
kind: CompositePolicy
metadata: {name: colors}
spec:
  parentResource: {apiVersion: e2e.metacel.dev/v1, resource: widgets}
  childResources:
    - {apiVersion: v1, resource: configmaps}
  children:
    - id: cm
      template: {apiVersion: v1, kind: ConfigMap, metadata: {name: "${parent.metadata.name}-cm"}}
  status:
    color: "${parent.spec.color}"
`

func TestSameJSON(t *testing.T) {
	for _, tc := range []struct {
		name string
		a, b any
		want bool
	}{
		{"a number computed as a float and read back as an int", map[string]any{"n": float64(100)}, map[string]any{"n": int64(100)}, true},
		{"different numbers", []any{int64(1)}, []any{int64(2)}, false},
		{"a named string type and a string", map[string]any{"s": metav1ConditionTrue}, map[string]any{"s": "True"}, true},
		{"a missing key", map[string]any{"a": "x"}, map[string]any{"b": "x"}, false},
		{"an extra key", map[string]any{"a": "x"}, map[string]any{"a": "x", "b": "y"}, false},
		{"lists in another order", []any{"a", "b"}, []any{"b", "a"}, false},
		{"null and an empty object", map[string]any(nil), map[string]any{}, false},
		{"nested equal", map[string]any{"c": []any{map[string]any{"t": "Ready", "ok": true}}}, map[string]any{"c": []any{map[string]any{"t": "Ready", "ok": true}}}, true},
		{"a bool and a string", true, "true", false},
	} {
		if got := sameJSON(tc.a, tc.b); got != tc.want {
			t.Errorf("%s: sameJSON = %v, want %v", tc.name, got, tc.want)
		}
	}
}

const metav1ConditionTrue = metav1.ConditionTrue

func TestASyncThatCreatesItsChildrenWritesTheStatusOnce(t *testing.T) {
	h := newHarness(t, widgetChildPolicy, widgetCRD)
	sent := statusWrites(h, nil)
	h.react("patch", "configmaps", func(a clienttesting.Action) (bool, runtime.Object, error) {
		obj := map[string]any{}
		_ = json.Unmarshal(a.(clienttesting.PatchAction).GetPatch(), &obj)
		return true, &unstructured.Unstructured{Object: obj}, nil // as created
	})
	h.cacheParent(t, widgetWithStatus(t, "red", nil))
	if err := h.c.syncer.sync(t.Context(), "ns/w"); err != nil {
		t.Fatal(err)
	}
	if len(*sent) != 1 {
		t.Fatalf("%d status writes, want 1", len(*sent))
	}
	conds, _ := (*sent)[0]["conditions"].([]any)
	for _, c := range conds {
		if c := c.(map[string]any); c["type"] == "Ready" && c["status"] != "True" {
			t.Errorf("Ready %v %q: the status must see the child this sync created", c["status"], c["message"])
		}
	}
}

// A sync that fails at a new generation keeps the policy's own conditions as they were evaluated,
// at their generation: stamped with the new one, a DatabaseReady=True judged of the old spec would
// say it holds of the new one, to kubectl wait and to any generation-aware health check. The
// runtime's Synced and Ready say the failure, at the new generation.
func TestAFailedSyncKeepsThePolicysConditionsAtTheirGeneration(t *testing.T) {
	h := newHarness(t, widgetStatusPolicy, widgetCRD)
	sent := statusWrites(h, nil)
	w := widgetWithStatus(t, "black", map[string]any{"color": "red", "observedGeneration": int64(1), "conditions": []any{
		map[string]any{"type": "Painted", "status": "True", "reason": "Done", "message": "red", "observedGeneration": int64(1), "lastTransitionTime": "2026-11-28T00:00:00Z"},
	}})
	w.SetGeneration(2)
	if err := h.c.syncer.reporter.fail(t.Context(), w, &syncError{reason: contract.ReasonValidationFailed, terminal: true, err: errors.New("no black widgets")}); err == nil {
		t.Fatal("fail returned nil")
	}
	if len(*sent) != 1 {
		t.Fatalf("status writes %v, want one", *sent)
	}
	gens := map[string]any{}
	for _, c := range (*sent)[0]["conditions"].([]any) {
		m := c.(map[string]any)
		gens[m["type"].(string)] = m["observedGeneration"]
	}
	if gens["Painted"] != float64(1) || gens[contract.ConditionSynced] != float64(2) {
		t.Errorf("observedGeneration by condition %v, want Painted at 1 (as evaluated), Synced at 2", gens)
	}
}
