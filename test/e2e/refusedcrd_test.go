//go:build e2e

package e2e

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"metacel.dev/metacel/runtime/contract"
	"metacel.dev/metacel/runtime/operator"
)

// renamedImagePolicy is the Cache policy of newCachePolicy with the hub's template.image renamed
// to template.ref: a change the stored parents would not survive, which the runtime refuses.
func renamedImagePolicy(text string) string {
	return strings.NewReplacer(
		"          image: {type: string, required: true}\n          pullPolicy", "          ref: {type: string, required: true}\n          pullPolicy",
		"              image: ${parent.spec.image}", "              ref: ${parent.spec.image}",
		"            image: ${parent.spec.template.image}\n          keep", "            image: ${parent.spec.template.ref}\n          keep",
		"          image: ${parent.spec.template.image}\n", "          image: ${parent.spec.template.ref}\n",
	).Replace(text)
}

// A runtime started after its policy's CRD change was refused (a restart, a new replica) converts
// the stored parents with the declaration the CRD holds, which the CRD carries: before, its
// sources held only the refused version, it served no converter of the CRD's, and every read of
// a parent at a version other than the stored one failed at the API server, until the policy was
// put back.
func TestARuntimeStartedAfterARefusedCRDChangeConverts(t *testing.T) {
	api := newCacheAPI(t)
	t.Cleanup(func() { logReloadClues(t, api.policyNS, "policy-cache", api.crd) })
	text := newCachePolicy(t, api.group)
	refused := renamedImagePolicy(text)
	if refused == text {
		t.Fatal("the policy of runtime/conversion/testdata/cache.yaml changed: renamedImagePolicy renames nothing")
	}
	grantPolicyText(t, api.policyNS, text)
	opts := operator.Options{PolicyNamespace: api.policyNS, Webhook: loopbackWebhook(t)}
	first := startRuntimeWith(t, opts)
	applyConfigMap(t, installPolicyConfigMap("policy-cache", api.policyNS, text))
	waitFor(t, crdsGVR, "", api.crd, wait, established)
	createWhenServed(t, api.v1alpha1, cacheAt(api.v1alpha1, api.parentNS, "c", map[string]any{"size": "2", "image": "redis:7"}))
	waitFor(t, configMapsGVR, api.parentNS, "c-settings", wait, func(*unstructured.Unstructured) error { return nil })

	applyConfigMap(t, installPolicyConfigMap("policy-cache", api.policyNS, refused))
	waitStatus(t, api.policyNS, "policy-cache", "the change refused", func(cm *corev1.ConfigMap) error {
		if got := cm.Annotations[contract.AnnotationPolicyLastError]; !strings.Contains(got, api.crd) {
			return fmt.Errorf("%s = %q, want the refusal of the change of %s", contract.AnnotationPolicyLastError, got, api.crd)
		}
		return nil
	})
	crd, err := get(t, crdsGVR, "", api.crd)
	if err != nil {
		t.Fatal(err)
	}
	if hub := crdVersionSchema(crd, "v1"); !strings.Contains(hub, `"image"`) || strings.Contains(hub, `"ref"`) {
		t.Fatalf("the CRD took the refused change: v1's schema %s", hub)
	}
	first.stop()

	startRuntimeWith(t, opts)
	eventually(t, wait, "the stored parent read at v1alpha1, converted by the restarted runtime", func() error {
		got, err := cluster.dynamic.Resource(api.v1alpha1).Namespace(api.parentNS).Get(t.Context(), "c", metav1.GetOptions{})
		if err != nil {
			return err
		}
		return convertedCache(got, "v1alpha1", 2)
	})
	if _, err := cluster.dynamic.Resource(api.v1alpha1).Namespace(api.parentNS).List(t.Context(), metav1.ListOptions{}); err != nil {
		t.Errorf("list at v1alpha1: %v", err)
	}
}

// crdVersionSchema is the openAPIV3Schema of a CRD's version, as JSON ("" when it has none).
func crdVersionSchema(crd *unstructured.Unstructured, version string) string {
	versions, _, _ := unstructured.NestedSlice(crd.Object, "spec", "versions")
	for _, v := range versions {
		v, _ := v.(map[string]any)
		if v["name"] != version {
			continue
		}
		schema, _, _ := unstructured.NestedMap(v, "schema", "openAPIV3Schema")
		data, _ := json.Marshal(schema)
		return string(data)
	}
	return ""
}
