//go:build e2e

package e2e

import (
	"fmt"
	"net"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/utils/ptr"

	"metacel.dev/metacel/runtime/operator"
	"metacel.dev/metacel/runtime/parentcrd"
	"metacel.dev/metacel/runtime/servingcert"
)

// versionedParents is how many parents are stored at the old version before the new one comes.
const versionedParents = 200

// oldCachePolicy is the first version of the Cache policy: one parent version, v1alpha1, whose
// size is a string.
func oldCachePolicy(group string) string {
	return `apiVersion: metacel.dev/v1alpha1
kind: CompositePolicy
metadata:
  name: cache
spec:
  serviceAccountName: cache
  parentResource: {apiVersion: ` + group + `/v1alpha1, resource: caches}
  parentSchema:
    kind: Cache
    install: true
    spec:
      size: {type: string, pattern: '^[0-9]+$', required: true}
      image: {type: string, required: true}
  childResources:
    - {apiVersion: v1, resource: configmaps}
  children:
    - id: settings
      template:
        apiVersion: v1
        kind: ConfigMap
        metadata:
          name: ${parent.metadata.name}-settings
        data:
          replicas: ${parent.spec.size}
          image: ${parent.spec.image}
`
}

// newCachePolicy is the second version: the example of package conversion (v1, replicas an
// integer, the image moved into template, v1alpha1 converted in CEL), in group.
func newCachePolicy(t *testing.T, group string) string {
	t.Helper()
	data, err := os.ReadFile("../../runtime/conversion/testdata/cache.yaml")
	if err != nil {
		t.Fatal(err)
	}
	return strings.ReplaceAll(string(data), "versions.example.com", group)
}

// TestAParentAPIGainsAVersionConvertedInCEL: parents stored at v1alpha1 by a policy of one version
// are read and written at both versions once the policy declares v1 with conversions in CEL: the
// runtime serves the CRD's conversion webhook, the children do not change, the stored parents are
// migrated to v1 and storedVersions trimmed; then v1alpha1 may stop being served. A conversion
// that fails for one object names it in the API server's answer.
func TestAParentAPIGainsAVersionConvertedInCEL(t *testing.T) {
	group := rand.String(8) + ".versions.e2e.metacel.dev"
	crdName := "caches." + group
	t.Cleanup(func() { _ = cluster.dynamic.Resource(crdsGVR).Delete(t.Context(), crdName, metav1.DeleteOptions{}) })
	v1alpha1 := schema.GroupVersionResource{Group: group, Version: "v1alpha1", Resource: "caches"}
	v1 := v1alpha1.GroupResource().WithVersion("v1")
	policyNS, parentNS := newNamespace(t, "policies"), newNamespace(t, "caches")
	newPolicy := newCachePolicy(t, group)
	grantPolicyText(t, policyNS, newPolicy)
	gens := &generations{}
	addr := freeLoopbackAddress(t)
	rt := startRuntimeWith(t, operator.Options{PolicyNamespace: policyNS, OnReload: gens.set, Webhook: &operator.Webhook{
		Addr:         addr,
		ClientConfig: apiextensionsClientConfigURL("https://" + addr + parentcrd.WebhookPath),
		Certificate:  servingcert.Options{SecretName: "metacel-webhook-tls", IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}},
	}})

	applyConfigMap(t, installPolicyConfigMap("policy-cache", policyNS, oldCachePolicy(group)))
	waitFor(t, crdsGVR, "", crdName, wait, established)
	for i := range versionedParents {
		createWhenServed(t, v1alpha1, cacheAt(v1alpha1, parentNS, fmt.Sprintf("c%03d", i), map[string]any{"size": strconv.Itoa(i % 7), "image": "redis:7"}))
	}
	eventually(t, wait, "every parent's child", func() error {
		return childrenCount(t, parentNS, versionedParents)
	})
	gens.waitFor(t, "cache", 1)
	before, synced := rt.writeCounts(), rt.reconciles("cache")

	applyConfigMap(t, installPolicyConfigMap("policy-cache", policyNS, newPolicy))
	gens.waitFor(t, "cache", 2)
	crd := waitFor(t, crdsGVR, "", crdName, wait, storedVersions("v1"))
	t.Logf("storedVersions trimmed to v1 after the migration; versions %v", crdVersions(crd))

	t.Run("each parent reads correctly converted at both versions", func(t *testing.T) {
		for _, gvr := range []schema.GroupVersionResource{v1, v1alpha1} {
			list, err := cluster.dynamic.Resource(gvr).Namespace(parentNS).List(t.Context(), metav1.ListOptions{})
			if err != nil {
				t.Fatalf("list at %s: %v", gvr.Version, err)
			}
			expectEqual(t, "parents at "+gvr.Version, len(list.Items), versionedParents)
			for _, p := range list.Items {
				i, _ := strconv.Atoi(strings.TrimPrefix(p.GetName(), "c"))
				if err := convertedCache(&p, gvr.Version, i%7); err != nil {
					t.Errorf("%s at %s: %v", p.GetName(), gvr.Version, err)
				}
			}
		}
	})

	t.Run("the children did not change", func(t *testing.T) {
		eventually(t, wait, "a sync of every parent by the new policy version", func() error {
			if n := rt.reconciles("cache") - synced; n < versionedParents {
				return fmt.Errorf("%v syncs since the new version", n)
			}
			return nil
		})
		for path, n := range rt.writesSince(before) {
			if strings.Contains(path, "/configmaps/") && strings.Contains(path, parentNS) {
				t.Errorf("%d write(s) to %s: a new version of the parent's API must not change its children", n, path)
			}
		}
	})

	t.Run("old clients keep writing v1alpha1", func(t *testing.T) {
		createWhenServed(t, v1alpha1, cacheAt(v1alpha1, parentNS, "late", map[string]any{"size": "9", "image": "redis:8"}))
		child := waitFor(t, configMapsGVR, parentNS, "late-settings", wait, func(*unstructured.Unstructured) error { return nil })
		expectEqual(t, "replicas of a parent written at v1alpha1", str(child, "data", "replicas"), "9")
		got, err := cluster.dynamic.Resource(v1).Namespace(parentNS).Get(t.Context(), "late", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if err := convertedCache(got, "v1", 9); err != nil {
			t.Error(err)
		}
	})

	t.Run("a conversion that fails names the object in the API server's answer", func(t *testing.T) {
		_, err := cluster.dynamic.Resource(v1alpha1).Namespace(parentNS).Create(t.Context(),
			cacheAt(v1alpha1, parentNS, "huge", map[string]any{"size": "99999999999999999999", "image": "x"}), metav1.CreateOptions{})
		if err == nil || !strings.Contains(err.Error(), `Cache "`+parentNS+`/huge"`) {
			t.Errorf("create of a parent whose conversion fails: error = %v, want it to name %s/huge", err, parentNS)
		}
	})

	t.Run("with storedVersions trimmed, v1alpha1 may stop being served", func(t *testing.T) {
		unserved := strings.Replace(newPolicy, "        deprecated: true\n", "        served: false\n        deprecated: true\n", 1)
		applyConfigMap(t, installPolicyConfigMap("policy-cache", policyNS, unserved))
		waitFor(t, crdsGVR, "", crdName, wait, func(crd *unstructured.Unstructured) error {
			if v := crdVersions(crd); !slices.Equal(v, []string{"v1", "v1alpha1 (not served)"}) {
				return fmt.Errorf("versions %v", v)
			}
			return nil
		})
	})
}

// cacheAt is a Cache of gvr's version.
func cacheAt(gvr schema.GroupVersionResource, ns, name string, spec map[string]any) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": gvr.GroupVersion().String(), "kind": "Cache",
		"metadata": map[string]any{"name": name, "namespace": ns}, "spec": spec,
	}}
}

// convertedCache checks a Cache read at version against the size it was created with.
func convertedCache(p *unstructured.Unstructured, version string, size int) error {
	if version == "v1alpha1" {
		if got := str(p, "spec", "size"); got != strconv.Itoa(size) {
			return fmt.Errorf("spec.size = %q, want %q", got, strconv.Itoa(size))
		}
		return nil
	}
	replicas, _, _ := unstructured.NestedInt64(p.Object, "spec", "replicas")
	image, _, _ := unstructured.NestedString(p.Object, "spec", "template", "image")
	if replicas != int64(size) || image == "" {
		return fmt.Errorf("spec = %v, want replicas %d and template.image", p.Object["spec"], size)
	}
	return nil
}

// childrenCount checks that ns holds n children (ConfigMaps named *-settings).
func childrenCount(t *testing.T, ns string, n int) error {
	list, err := cluster.kube.CoreV1().ConfigMaps(ns).List(t.Context(), metav1.ListOptions{})
	if err != nil {
		return err
	}
	got := 0
	for _, cm := range list.Items {
		if strings.HasSuffix(cm.Name, "-settings") {
			got++
		}
	}
	if got != n {
		return fmt.Errorf("%d children, want %d", got, n)
	}
	return nil
}

// storedVersions checks a CRD's status.storedVersions.
func storedVersions(want ...string) func(*unstructured.Unstructured) error {
	return func(crd *unstructured.Unstructured) error {
		got, _, _ := unstructured.NestedStringSlice(crd.Object, "status", "storedVersions")
		if !slices.Equal(got, want) {
			return fmt.Errorf("status.storedVersions = %v, want %v", got, want)
		}
		return nil
	}
}

// crdVersions lists a CRD's versions, the storage one first, each marked when not served.
func crdVersions(crd *unstructured.Unstructured) []string {
	versions, _, _ := unstructured.NestedSlice(crd.Object, "spec", "versions")
	var out []string
	for _, v := range versions {
		m, _ := v.(map[string]any)
		name, _ := m["name"].(string)
		if served, _ := m["served"].(bool); !served {
			name += " (not served)"
		}
		if storage, _ := m["storage"].(bool); storage {
			out = append([]string{name}, out...)
			continue
		}
		out = append(out, name)
	}
	return out
}

// freeLoopbackAddress returns an address on loopback no one listens on.
func freeLoopbackAddress(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = l.Close() }()
	return l.Addr().String()
}

// apiextensionsClientConfigURL is a webhook client config of a URL.
func apiextensionsClientConfigURL(url string) apiextensionsv1.WebhookClientConfig {
	return apiextensionsv1.WebhookClientConfig{URL: ptr.To(url)}
}
