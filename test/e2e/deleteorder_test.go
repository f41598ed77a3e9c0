//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"net/http"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// TestADeletedParentsChildrenGoInReverseOrder: a parent of testdata/policies/deleteorder makes a
// Namespace, a Secret in it and a Deployment in it that reads the Secret. Deleting the parent
// deletes the Deployment first, then, once it is gone, the Secret, and the Namespace last (the
// order of the delete requests the runtime sent), and leaves no object.
func TestADeletedParentsChildrenGoInReverseOrder(t *testing.T) {
	rt := startRuntime(t, filepath.Join("testdata", "policies", "deleteorder"))
	ns := newNamespace(t, "deleteorder")
	create(t, configMapsGVR, &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "v1", "kind": "ConfigMap",
		"metadata": map[string]any{"name": "stack", "namespace": ns, "labels": map[string]any{"metacel.dev/e2e-deleteorder": "true"}},
		"data":     map[string]any{"password": "s3cret"},
	}})
	childNS := ns + "-stack"
	t.Cleanup(func() {
		_ = cluster.dynamic.Resource(namespacesGVR).Delete(context.Background(), childNS, metav1.DeleteOptions{})
	})
	waitFor(t, deploymentsGVR, childNS, "stack-app", 2*wait, func(d *unstructured.Unstructured) error {
		if n, _, _ := unstructured.NestedInt64(d.Object, "status", "availableReplicas"); n != 1 {
			return fmt.Errorf("%d replicas available, want 1", n)
		}
		return nil
	})
	parent := waitFor(t, configMapsGVR, ns, "stack", wait, nil)
	if !slices.Contains(parent.GetFinalizers(), "metacel.dev/cleanup") {
		t.Fatalf("finalizers %v, want metacel.dev/cleanup: its children have an order", parent.GetFinalizers())
	}

	before := len(rt.sentSoFar())
	if err := cluster.dynamic.Resource(configMapsGVR).Namespace(ns).Delete(t.Context(), "stack", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitGone(t, configMapsGVR, ns, "stack", 4*wait)
	waitGone(t, deploymentsGVR, childNS, "stack-app", wait)
	waitGone(t, secretsGVR, childNS, "stack-secret", wait)
	waitGone(t, namespacesGVR, "", childNS, wait)

	var deletes []string
	for _, r := range rt.sentSoFar()[before:] {
		if r.method == http.MethodDelete {
			deletes = append(deletes, r.path)
		}
	}
	want := []string{
		"/apis/apps/v1/namespaces/" + childNS + "/deployments/stack-app",
		"/api/v1/namespaces/" + childNS + "/secrets/stack-secret",
		"/api/v1/namespaces/" + childNS,
	}
	if strings.Join(deletes, "\n") != strings.Join(want, "\n") {
		t.Errorf("the runtime deleted\n%s\nwant, in this order,\n%s", strings.Join(deletes, "\n"), strings.Join(want, "\n"))
	}
}
