//go:build e2e

package e2e

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
)

// A child whose computed value the API server's validation refuses (a label value that is an
// e-mail address) is InvalidChild on its parent, in the API server's words, and never sent: no
// create reaches the API server. Once the value is valid, the child is created.
func TestAChildTheAPIServerWouldRefuseIsNeverSent(t *testing.T) {
	rt := startRuntime(t, filepath.Join("testdata", "policies", "invalidchild"))
	ns := newNamespace(t, "invalidchild")
	create(t, widgetsGVR, &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "e2e.metacel.dev/v1", "kind": "Widget",
		"metadata": map[string]any{"name": "w", "namespace": ns},
		"spec":     map[string]any{"color": "ops@example.com"},
	}})
	waitFor(t, widgetsGVR, ns, "w", wait, func(w *unstructured.Unstructured) error {
		if err := hasCondition("Synced", "False", "InvalidChild", "")(w); err != nil {
			return err
		}
		if msg, _ := condition(w, "Synced")["message"].(string); !strings.Contains(msg, `"ops@example.com"`) || !strings.Contains(msg, "a valid label must be") {
			return fmt.Errorf("message %q does not give the API server's reason for the label value", msg)
		}
		return nil
	})
	configMaps := "/api/v1/namespaces/" + ns + "/configmaps" // a create: POST to the collection
	expectEqual(t, "creates of the child sent", rt.writesTo(configMaps), 0)

	patch := []byte(`{"spec":{"color":"blue"}}`)
	if _, err := cluster.dynamic.Resource(widgetsGVR).Namespace(ns).Patch(t.Context(), "w", types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, configMapsGVR, ns, "w-labelled", wait, func(*unstructured.Unstructured) error { return nil })
	waitFor(t, widgetsGVR, ns, "w", wait, hasCondition("Synced", "True", "", ""))
}
