//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"metacel.dev/metacel/runtime/contract"
	"metacel.dev/metacel/runtime/operator"
	"metacel.dev/metacel/runtime/policystatus"
)

// TestATwinNeverGetsTheCRDOverARestart: two policies install the CRD of one parent resource
// (testdata/policies/twins). While cache runs with its CRD, cache-twin is refused, naming cache. A
// restart with both present, where neither runs yet, decides the same from the CRD's
// installed-by label before either writes: it writes no CRD, the label stays cache, the twin is
// refused, and cache serves its parents (issue 42, item 0).
func TestATwinNeverGetsTheCRDOverARestart(t *testing.T) {
	dir := filepath.Join("testdata", "policies", "twins")
	caches := schema.GroupVersionResource{Group: "twins.e2e.metacel.dev", Version: "v1", Resource: "caches"}
	crdName := caches.Resource + "." + caches.Group
	crdPath := "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/" + crdName
	t.Cleanup(func() {
		_ = cluster.dynamic.Resource(crdsGVR).Delete(context.Background(), crdName, metav1.DeleteOptions{})
	})
	policyNS, ns := newNamespace(t, "twins-policies"), newNamespace(t, "twins")
	grantPolicies(t, policyNS, dir)
	cacheCM := installPolicyConfigMap("policy-cache", policyNS, readFile(t, filepath.Join(dir, "cache.yaml")))
	twinCM := installPolicyConfigMap("policy-cache-twin", policyNS, readFile(t, filepath.Join(dir, "cache-twin.yaml")))
	installedByCache := func(crd *unstructured.Unstructured) error {
		if err := established(crd); err != nil {
			return err
		}
		if by := crd.GetLabels()[contract.LabelInstalledBy]; by != "cache" {
			return fmt.Errorf("installed by %q, want cache", by)
		}
		return nil
	}
	twinRefused := func(cm *corev1.ConfigMap) error {
		if err := inState(policystatus.Invalid, "one parent resource has one policy")(cm); err != nil {
			return err
		}
		if last := cm.Annotations[contract.AnnotationPolicyLastError]; !strings.Contains(last, `policy "cache"`) {
			return fmt.Errorf("last error %q does not name policy cache", last)
		}
		return nil
	}
	serves := func(name string) {
		t.Helper()
		createWhenServed(t, caches, &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": caches.GroupVersion().String(), "kind": "Cache",
			"metadata": map[string]any{"name": name, "namespace": ns}, "spec": map[string]any{"size": int64(3)},
		}})
		cm := waitFor(t, configMapsGVR, ns, name+"-cache", wait, nil)
		expectEqual(t, "the child's policy", cm.GetLabels()["metacel.dev/policy-name"], "cache")
	}

	rt := startRuntimeWith(t, operator.Options{PolicyNamespace: policyNS})
	applyConfigMap(t, cacheCM)
	waitFor(t, crdsGVR, "", crdName, wait, installedByCache)
	waitStatus(t, policyNS, cacheCM.Name, "cache Running", inState(policystatus.Running, ""))
	serves("a")
	applyConfigMap(t, twinCM)
	waitStatus(t, policyNS, twinCM.Name, "cache-twin refused", twinRefused)
	expectEqual(t, "writes to the CRD by the first runtime (its create)", rt.writesTo(crdPath), int64(1))
	waitFor(t, crdsGVR, "", crdName, wait, installedByCache)

	rt.stop()
	forgetStatus(t, policyNS, twinCM.Name)
	again := startRuntimeWith(t, operator.Options{PolicyNamespace: policyNS})
	waitStatus(t, policyNS, twinCM.Name, "cache-twin refused after the restart", twinRefused)
	serves("b")
	expectEqual(t, "writes to the CRD after the restart", again.writesTo(crdPath), int64(0))
	waitFor(t, crdsGVR, "", crdName, wait, installedByCache)
}

// forgetStatus removes a policy ConfigMap's state label, so that the state a runtime reports is
// its own, not the one before it.
func forgetStatus(t *testing.T, ns, name string) {
	t.Helper()
	cm, err := cluster.kube.CoreV1().ConfigMaps(ns).Get(t.Context(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	delete(cm.Labels, contract.LabelPolicyState)
	if _, err := cluster.kube.CoreV1().ConfigMaps(ns).Update(t.Context(), cm, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
}
