//go:build e2e

package e2e

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/utils/ptr"

	"metacel.dev/metacel/runtime/contract"
	"metacel.dev/metacel/runtime/operator"
	"metacel.dev/metacel/runtime/parentcrd"
	"metacel.dev/metacel/runtime/plan"
	"metacel.dev/metacel/runtime/rollout"
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
func newCachePolicy(t testing.TB, group string) string {
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
	api := newCacheAPI(t)
	group, crdName, v1alpha1, v1, policyNS, parentNS := api.group, api.crd, api.v1alpha1, api.v1, api.policyNS, api.parentNS
	t.Cleanup(func() { logReloadClues(t, policyNS, "policy-cache", crdName) })
	// the new version rolls out as any new version of a policy does: a third of the parents, then
	// two thirds, then all
	newPolicy := rolloutSpec(0, 60)(newCachePolicy(t, group))
	grantPolicyText(t, policyNS, newPolicy)
	gens := &generations{}
	rt := startRuntimeWith(t, operator.Options{PolicyNamespace: policyNS, OnReload: gens.set, Webhook: loopbackWebhook(t)})

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

	t.Run("plan: the new version changes no child, and migrates the stored parents", func(t *testing.T) {
		out, err := exec.CommandContext(t.Context(), buildMetacel(t), "plan", writeTemp(t, "cache.yaml", []byte(newPolicy)),
			"--kubeconfig", cluster.kubeconfig, "--namespace", policyNS, "-o", "json").Output()
		if err != nil {
			t.Fatalf("plan: %v\n%s", err, stderrOf(err))
		}
		var p plan.Plan
		if err := json.Unmarshal(out, &p); err != nil {
			t.Fatalf("plan -o json: %v\n%s", err, out)
		}
		if want := (plan.Totals{Parents: versionedParents}); p.Totals != want {
			t.Errorf("totals %+v, want %+v", p.Totals, want)
		}
		if v := p.Versions; v == nil || v.Storage != "v1" || v.Migrated != versionedParents {
			t.Errorf("versions %+v, want %d stored parents migrated to v1", v, versionedParents)
		}
		text, err := exec.CommandContext(t.Context(), buildMetacel(t), "plan", writeTemp(t, "cache.yaml", []byte(newPolicy)),
			"--kubeconfig", cluster.kubeconfig, "--namespace", policyNS).Output()
		// as docs/testing.md shows it
		want := "\n200 parents, 0 changed: 0 created, 0 updated, 0 recreated, 0 deleted, 0 released, 0 failing\n" +
			"versions: served now v1alpha1, by the candidate v1, v1alpha1; stored at v1: the runtime rewrites 200 stored parents at v1, then trims the CRD's storedVersions\n"
		if err != nil || !strings.HasSuffix(string(text), want) {
			t.Errorf("plan printed (%v):\n%s\nwant it to end with:\n%s", err, text, want)
		}
	})

	applyConfigMap(t, installPolicyConfigMap("policy-cache", policyNS, newPolicy))
	// it waited for the CRD it installs, and rolls out all the same: it did not take every parent
	// at once (the stable version starts again on the new CRD, beside it)
	waitEvent(t, policyNS, "policy-cache", "PolicyRollingOut")
	waitEvent(t, policyNS, "policy-cache", "PolicyRolledOut")
	waitStatus(t, policyNS, "policy-cache", "the new version rolled out to every parent", func(cm *corev1.ConfigMap) error {
		if state, step := cm.Labels[contract.LabelPolicyState], cm.Labels[contract.LabelPolicyRollout]; state != "Running" || step != "" {
			return fmt.Errorf("state %q, rollout step %q", state, step)
		}
		record, err := cluster.kube.CoreV1().ConfigMaps(policyNS).Get(t.Context(), rollout.ConfigMapName("cache"), metav1.GetOptions{})
		if err != nil {
			return fmt.Errorf("no rollout record: %w", err)
		}
		if !strings.Contains(record.Data["record.json"], `"phase":"Stable"`) {
			return fmt.Errorf("rollout record %s", record.Data["record.json"])
		}
		return nil
	})
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
		waitStatus(t, policyNS, "policy-cache", "the failed conversion in the policy's status", func(cm *corev1.ConfigMap) error {
			if got := cm.Annotations[contract.AnnotationPolicyLastError]; !strings.Contains(got, parentNS+`/huge`) {
				return fmt.Errorf("%s = %q", contract.AnnotationPolicyLastError, got)
			}
			return nil
		})
		if _, err := cluster.dynamic.Resource(v1).Namespace(parentNS).Get(t.Context(), "c001", metav1.GetOptions{}); err != nil {
			t.Errorf("the other parents convert: %v", err)
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

// cacheAPI is a Cache API of its own for one test: a random group (its CRD deleted when the test
// ends), its two versions, and namespaces for the policy and the parents.
type cacheAPI struct {
	group, crd         string
	v1alpha1, v1       schema.GroupVersionResource
	policyNS, parentNS string
}

func newCacheAPI(t testing.TB) cacheAPI {
	api := cacheAPI{group: rand.String(8) + ".versions.e2e.metacel.dev", policyNS: newNamespace(t, "policies"), parentNS: newNamespace(t, "caches")}
	api.crd = "caches." + api.group
	api.v1alpha1 = schema.GroupVersionResource{Group: api.group, Version: "v1alpha1", Resource: "caches"}
	api.v1 = api.v1alpha1.GroupResource().WithVersion("v1")
	t.Cleanup(func() {
		_ = cluster.dynamic.Resource(crdsGVR).Delete(context.Background(), api.crd, metav1.DeleteOptions{})
	})
	return api
}

// loopbackWebhook serves the conversion webhook of an in-process runtime on loopback, the URL the
// CRD names.
func loopbackWebhook(t testing.TB) *operator.Webhook {
	addr := freeLoopbackAddressTB(t)
	return &operator.Webhook{
		Addr:         addr,
		ClientConfig: apiextensionsClientConfigURL("https://" + addr + parentcrd.WebhookPath),
		Certificate:  servingcert.Options{SecretName: "metacel-webhook-tls", IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}},
	}
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
func freeLoopbackAddress(t *testing.T) string { return freeLoopbackAddressTB(t) }

func freeLoopbackAddressTB(t testing.TB) string {
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

// TestConversionsAreAnsweredWhileAReplicaIsKilled: two replicas serve the conversion webhook behind
// one address, as a Service's endpoints do (a TCP balancer in the test stands in for the Service:
// each connection to the next replica that accepts it); killed with kill -9, the leader stops
// answering, and reads at the version that is not stored keep being converted by the other.
func TestConversionsAreAnsweredWhileAReplicaIsKilled(t *testing.T) {
	bin := buildMetacel(t)
	api := newCacheAPI(t)
	group, crdName, v1alpha1, v1, policyNS, parentNS := api.group, api.crd, api.v1alpha1, api.v1, api.policyNS, api.parentNS
	text := newCachePolicy(t, group)
	grantPolicyText(t, policyNS, text)
	applyConfigMap(t, installPolicyConfigMap("policy-cache", policyNS, text))

	front, backends := freeLoopbackAddress(t), []string{freeLoopbackAddress(t), freeLoopbackAddress(t)}
	served := startBalancer(t, front, backends)
	replicas := make([]*process, len(backends))
	for i, addr := range backends {
		replicas[i] = startProcess(t, bin, "run", "--kubeconfig", cluster.kubeconfig, "--policy-namespace", policyNS,
			"--leader-elect", "--leader-election-lease-duration=4s", "--leader-election-renew-deadline=3s", "--leader-election-retry-period=1s",
			"--webhook-bind-address", addr, "--webhook-url", "https://"+front+parentcrd.WebhookPath,
			"--metrics-bind-address=0", "--health-probe-bind-address=0")
	}
	waitFor(t, crdsGVR, "", crdName, wait, established)
	for i := range 20 {
		createWhenServed(t, v1, cacheAt(v1, parentNS, fmt.Sprintf("c%02d", i), map[string]any{"replicas": int64(i), "template": map[string]any{"image": "redis:7"}}))
	}
	readOld := func() error {
		list, err := cluster.dynamic.Resource(v1alpha1).Namespace(parentNS).List(t.Context(), metav1.ListOptions{})
		if err != nil {
			return err
		}
		if len(list.Items) != 20 {
			return fmt.Errorf("%d parents at v1alpha1, want 20", len(list.Items))
		}
		return convertedCache(&list.Items[7], "v1alpha1", 7)
	}
	eventually(t, wait, "parents read at v1alpha1 through the webhook", readOld)
	for _, b := range backends {
		eventually(t, wait, "a conversion answered by the replica at "+b, func() error { return convertsAt(t, policyNS, b, group) })
	}
	// the API server keeps its connection to the webhook: kill the replica at its other end
	killed := slices.IndexFunc(backends, func(b string) bool { return served(b) > 0 })
	replicas[killed].kill9()
	eventually(t, wait, "a read at v1alpha1 after the kill", readOld)
	for i := range 20 {
		if err := readOld(); err != nil {
			t.Fatalf("read %d at v1alpha1 with one replica killed: %v", i, err)
		}
	}
}

// startBalancer accepts TCP connections at front and passes each to the next of backends that
// accepts it, as a Service passes them to its endpoints, until the test ends; served counts the
// connections each backend took.
func startBalancer(t *testing.T, front string, backends []string) (served func(backend string) int64) {
	t.Helper()
	l, err := net.Listen("tcp", front)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = l.Close() })
	counts := make([]atomic.Int64, len(backends))
	var next atomic.Int64
	go func() {
		for {
			in, err := l.Accept()
			if err != nil {
				return
			}
			go func() {
				defer func() { _ = in.Close() }()
				for range backends {
					i := int(next.Add(1)) % len(backends)
					out, err := net.DialTimeout("tcp", backends[i], time.Second)
					if err != nil {
						continue
					}
					counts[i].Add(1)
					defer func() { _ = out.Close() }()
					go func() { _, _ = io.Copy(out, in) }()
					_, _ = io.Copy(in, out)
					return
				}
			}()
		}
	}()
	return func(backend string) int64 { return counts[slices.Index(backends, backend)].Load() }
}

// convertsAt sends a ConversionReview of one Cache to the webhook at addr directly, trusting the
// CA of the Secret the replicas share, and checks that it is converted.
func convertsAt(t *testing.T, ns, addr, group string) error {
	secret, err := cluster.kube.CoreV1().Secrets(ns).Get(t.Context(), "metacel-webhook-tls", metav1.GetOptions{})
	if err != nil {
		return err
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(secret.Data["ca.crt"])
	client := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}}}
	review := map[string]any{"apiVersion": "apiextensions.k8s.io/v1", "kind": "ConversionReview", "request": map[string]any{
		"uid": "e2e", "desiredAPIVersion": group + "/v1alpha1",
		"objects": []any{map[string]any{"apiVersion": group + "/v1", "kind": "Cache", "metadata": map[string]any{"name": "probe", "namespace": ns, "uid": "u"},
			"spec": map[string]any{"replicas": 2, "template": map[string]any{"image": "redis:7"}}}},
	}}
	body, _ := json.Marshal(review)
	resp, err := client.Post("https://"+addr+parentcrd.WebhookPath, "application/json", bytes.NewReader(body))
	if err != nil {
		return err
	}
	defer func() { _ = resp.Body.Close() }()
	var got apiextensionsv1.ConversionReview
	if err := json.NewDecoder(resp.Body).Decode(&got); err != nil {
		return fmt.Errorf("HTTP %d: %w", resp.StatusCode, err)
	}
	if got.Response == nil || got.Response.Result.Status != metav1.StatusSuccess || len(got.Response.ConvertedObjects) != 1 ||
		!strings.Contains(string(got.Response.ConvertedObjects[0].Raw), `"size":"2"`) {
		return fmt.Errorf("the replica answered %+v", got.Response)
	}
	return nil
}

// logReloadClues logs, when the test failed, what may have started a policy again: the events
// of its ConfigMap (each load and reload, with its generation) and the writers of its CRD with
// the CRD's generation (a spec change restarts the policies that use it).
func logReloadClues(t *testing.T, ns, configMap, crd string) {
	t.Helper()
	if !t.Failed() {
		return
	}
	ctx := context.Background()
	events, err := cluster.kube.CoreV1().Events(ns).List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.name=" + configMap})
	if err != nil {
		t.Logf("events of %s/%s: %v", ns, configMap, err)
	} else {
		for _, e := range events.Items {
			t.Logf("event of %s/%s at %s: %s %s (%dx)", ns, configMap, e.LastTimestamp.Format(time.RFC3339), e.Reason, e.Message, e.Count)
		}
	}
	got, err := cluster.dynamic.Resource(crdsGVR).Get(ctx, crd, metav1.GetOptions{})
	if err != nil {
		t.Logf("CRD %s: %v", crd, err)
		return
	}
	t.Logf("CRD %s: generation %d", crd, got.GetGeneration())
	for _, m := range got.GetManagedFields() {
		t.Logf("CRD %s written by %q (%s%s) at %v", crd, m.Manager, m.Operation, m.Subresource, m.Time)
	}
}
