//go:build e2e

package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"metacel.dev/metacel/runtime/contract"
)

// goldWidgetPolicy serves the Widgets labelled tier=gold, with a ConfigMap in the namespace their
// spec.color names (a cross-namespace child: the parent carries the cleanup finalizer).
const goldWidgetPolicy = `apiVersion: metacel.dev/v1alpha1
kind: CompositePolicy
metadata:
  name: gold-widget
spec:
  parentResource:
    apiVersion: e2e.metacel.dev/v1
    resource: widgets
    labelSelector: {matchLabels: {tier: gold}}
  confinement:
    childNamespaces: {names: ["*"]}
  childResources:
    - apiVersion: v1
      resource: configmaps
  children:
    - id: far
      crossNamespace: true
      template:
        apiVersion: v1
        kind: ConfigMap
        metadata:
          name: "${parent.metadata.name}-far"
          namespace: "${parent.spec.color}"
`

// TestParentLeavingTheSelector: a parent that stops matching the policy's labelSelector is let go
// of: its cleanup finalizer goes (else its deletion would hang for ever), its children stay.
func TestParentLeavingTheSelector(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "gold.yaml"), []byte(goldWidgetPolicy), 0o644); err != nil {
		t.Fatal(err)
	}
	startRuntime(t, dir)
	ns, far := newNamespace(t, "gold"), newNamespace(t, "gold-far")
	w := widget(ns, "w")
	w.SetLabels(map[string]string{"tier": "gold"})
	if err := unstructured.SetNestedField(w.Object, far, "spec", "color"); err != nil {
		t.Fatal(err)
	}
	create(t, widgetsGVR, w)
	waitFor(t, configMapsGVR, far, "w-far", wait, nil)
	waitFor(t, widgetsGVR, ns, "w", wait, hasFinalizer(true))

	patch(t, widgetsGVR, ns, "w", `{"metadata":{"labels":{"tier":null}}}`)
	waitFor(t, widgetsGVR, ns, "w", wait, hasFinalizer(false))
	waitEvent(t, ns, "w", "LeftPolicy")
	if _, err := get(t, configMapsGVR, far, "w-far"); err != nil {
		t.Errorf("the children of a parent let go of stay: %v", err)
	}
	deleteObj(t, widgetsGVR, ns, "w")
	waitGone(t, widgetsGVR, ns, "w", wait)
}

func hasFinalizer(want bool) func(*unstructured.Unstructured) error {
	return func(obj *unstructured.Unstructured) error {
		if has := slices.Contains(obj.GetFinalizers(), contract.Finalizer); has != want {
			return fmt.Errorf("finalizers %v", obj.GetFinalizers())
		}
		return nil
	}
}
