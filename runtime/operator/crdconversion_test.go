package operator

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	kubefake "k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"metacel.dev/metacel/runtime/apply"
	"metacel.dev/metacel/runtime/contract"
	"metacel.dev/metacel/runtime/policy"
	"metacel.dev/metacel/runtime/servingcert"
)

// versionedCache is the policy of package conversion's tests: Cache at v1, the policy's version,
// and v1alpha1, with replacements (old, new, ...) made in its text.
func versionedCache(t *testing.T, replacements ...string) *policy.Document {
	t.Helper()
	data, err := os.ReadFile("../conversion/testdata/cache.yaml")
	if err != nil {
		t.Fatal(err)
	}
	text := string(data)
	for i := 0; i < len(replacements); i += 2 {
		if !strings.Contains(text, replacements[i]) {
			t.Fatalf("cache.yaml holds no %q", replacements[i])
		}
		text = strings.Replace(text, replacements[i], replacements[i+1], 1)
	}
	docs, err := policy.Parse("cache.yaml", []byte(text))
	if err != nil {
		t.Fatal(err)
	}
	return docs[0]
}

// singleVersionCache is versionedCache with its one version, v1.
func singleVersionCache(t *testing.T) *policy.Document {
	t.Helper()
	data, err := os.ReadFile("../conversion/testdata/cache.yaml")
	if err != nil {
		t.Fatal(err)
	}
	text := string(data)
	versions, children := strings.Index(text, "    versions:\n"), strings.Index(text, "  childResources:")
	docs, err := policy.Parse("cache.yaml", []byte(text[:versions]+text[children:]))
	if err != nil {
		t.Fatal(err)
	}
	return docs[0]
}

// renamedImage is versionedCache with the hub's spec.template.image renamed to ref: a change that
// breaks every stored parent.
func renamedImage(t *testing.T) *policy.Document {
	return versionedCache(t,
		"          image: {type: string, required: true}\n          pullPolicy", "          ref: {type: string, required: true}\n          pullPolicy",
		"              image: ${parent.spec.image}", "              ref: ${parent.spec.image}",
		"            image: ${parent.spec.template.image}\n          keep", "            image: ${parent.spec.template.ref}\n          keep",
		"          image: ${parent.spec.template.image}\n", "          image: ${parent.spec.template.ref}\n")
}

// parentCRDOf is the CRD a policy declares.
func parentCRDOf(t *testing.T, doc *policy.Document) *apiextensionsv1.CustomResourceDefinition {
	t.Helper()
	crd, err := policy.ParentCRD(doc)
	if err != nil {
		t.Fatal(err)
	}
	return crd
}

// storedCache is a Cache as the CRD stores it, at its storage version versions.example.com/v1.
func storedCache(spec map[string]any) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{"apiVersion": "versions.example.com/v1", "kind": "Cache",
		"metadata": map[string]any{"name": "c", "namespace": "ns"}, "spec": spec}}
}

// cachesAt is the resource of Caches at a version.
func cachesAt(version string) schema.GroupVersionResource {
	return schema.GroupVersionResource{Group: "versions.example.com", Version: version, Resource: "caches"}
}

// testWebhook is a conversion webhook whose certificate is ready, on a fake cluster.
func testWebhook(t *testing.T) *conversionServer {
	t.Helper()
	keeper := servingcert.New(kubefake.NewClientset(), servingcert.Options{Namespace: "metacel-system", SecretName: "metacel-webhook-tls",
		DNSNames: []string{"metacel-webhook.metacel-system.svc"}})
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	go func() { _ = keeper.Run(ctx) }()
	select {
	case <-keeper.Ready():
	case <-time.After(10 * time.Second):
		t.Fatal("the webhook's certificate is not ready")
	}
	return newConversionServer(&Webhook{ClientConfig: apiextensionsv1.WebhookClientConfig{
		Service: &apiextensionsv1.ServiceReference{Namespace: "metacel-system", Name: "metacel-webhook"}}}, keeper, nil)
}

// installedBy is the CRD the runtime installed for doc, with the webhook's client config, storing
// parents at v1, and the converter of its declaration.
func installedBy(t *testing.T, webhook *conversionServer, doc *policy.Document) *unstructured.Unstructured {
	t.Helper()
	crd := parentCRDOf(t, doc)
	if _, err := webhook.prepare(t.Context(), doc, crd); err != nil {
		t.Fatal(err)
	}
	u, err := desiredCRD(doc, crd)
	if err != nil {
		t.Fatal(err)
	}
	_ = unstructured.SetNestedStringSlice(u.Object, []string{"v1"}, "status", "storedVersions")
	return u
}

// cacheCluster is a fake cluster holding objs, where Caches list at v1 and v1alpha1, whose CRD
// patches return what was sent; patched counts them.
func cacheCluster(objs ...runtime.Object) (*dynamicfake.FakeDynamicClient, *int) {
	client := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), map[schema.GroupVersionResource]string{
		crdGVR: "CustomResourceDefinitionList", cachesAt("v1"): "CacheList", cachesAt("v1alpha1"): "CacheList"}, objs...)
	patched := new(int)
	client.PrependReactor("patch", crdGVR.Resource, func(a k8stesting.Action) (bool, runtime.Object, error) {
		*patched++
		obj := &unstructured.Unstructured{}
		err := json.Unmarshal(a.(k8stesting.PatchAction).GetPatch(), &obj.Object)
		return true, obj, err
	})
	return client, patched
}

// installerOn is the CRD installer of a running policy on client, with webhook.
func installerOn(client *dynamicfake.FakeDynamicClient, webhook *conversionServer) *crdInstaller {
	writer := apply.NewWriter(client)
	return &crdInstaller{client: client, runtime: writer, runs: func(string) bool { return true }, conversion: webhook,
		writer: func(string, string) (*apply.Writer, error) { return writer, nil }}
}

// convertsStored reports how the webhook converts a stored v1 Cache to v1alpha1.
func convertsStored(t *testing.T, webhook *conversionServer) error {
	t.Helper()
	c, ok := webhook.lookup(schema.GroupKind{Group: "versions.example.com", Kind: "Cache"})
	if !ok {
		t.Fatal("the webhook has no converter of Caches")
	}
	stored := storedCache(map[string]any{"replicas": int64(1), "template": map[string]any{"image": "redis:7"}})
	_, err := c.Convert(t.Context(), stored, "versions.example.com/v1alpha1")
	return err
}

// A new version of the policy renamed the hub's template.image to template.ref, a change the
// installer refuses: "the CRD is left as it is and the running version keeps serving". The
// webhook still converted with the refused version's templates, so that every read of the old
// CRD's parents at v1alpha1 failed (template.ref is not there). The converter that serves is the
// one of the declaration the CRD holds, on the leader that refused and on every other replica.
func TestARefusedVersionDoesNotReplaceTheRunningConverter(t *testing.T) {
	tests := []struct {
		name string
		// offerRefused has webhook meet the refused version, on a cluster holding crd
		offerRefused func(t *testing.T, webhook *conversionServer, crd *unstructured.Unstructured)
	}{
		{name: "the leader, whose install is refused", offerRefused: func(t *testing.T, webhook *conversionServer, crd *unstructured.Unstructured) {
			stored := storedCache(map[string]any{"replicas": int64(1), "template": map[string]any{"image": "redis:7"}})
			client, patched := cacheCluster(crd, stored)
			refused := renamedImage(t)
			_, err := installerOn(client, webhook).installParentCRD(t.Context(), refused, parentCRDOf(t, refused), []string{"cache"})
			if err == nil || *patched > 0 {
				t.Fatalf("installParentCRD() = %v, %d patches: want the breaking change refused", err, *patched)
			}
		}},
		{name: "a replica that reads the sources", offerRefused: func(t *testing.T, webhook *conversionServer, crd *unstructured.Unstructured) {
			refused := renamedImage(t)
			webhook.offerPolicy(t.Context(), parentCRD{doc: refused, crd: parentCRDOf(t, refused)})
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			webhook := testWebhook(t)
			running := versionedCache(t)
			crd := installedBy(t, webhook, running)
			webhook.offerPolicy(t.Context(), parentCRD{doc: running, crd: parentCRDOf(t, running)})
			webhook.crdDeclares(t.Context(), crd.GetName(), crd.GetAnnotations())
			if err := convertsStored(t, webhook); err != nil {
				t.Fatalf("before the refused version: %v", err)
			}
			tt.offerRefused(t, webhook, crd)
			if err := convertsStored(t, webhook); err != nil {
				t.Errorf("after the refused version, a stored parent of the CRD in the cluster does not convert: %v", err)
			}
		})
	}
}

// Once the CRD holds the new declaration (the leader wrote it), every replica converts with it.
func TestTheNewConverterServesOnceTheCRDHoldsIt(t *testing.T) {
	webhook := testWebhook(t)
	running, renamed := versionedCache(t), renamedImage(t)
	webhook.offerPolicy(t.Context(), parentCRD{doc: running, crd: parentCRDOf(t, running)})
	old := installedBy(t, webhook, running)
	webhook.crdDeclares(t.Context(), old.GetName(), old.GetAnnotations())
	webhook.offerPolicy(t.Context(), parentCRD{doc: renamed, crd: parentCRDOf(t, renamed)})
	if err := convertsStored(t, webhook); err != nil {
		t.Fatalf("before the CRD changes: %v", err)
	}
	written := installedBy(t, webhook, renamed)
	webhook.crdDeclares(t.Context(), written.GetName(), written.GetAnnotations())
	if err := convertsStored(t, webhook); err == nil {
		t.Errorf("a v1 Cache with template.image converts with the running version's templates, after the CRD holds the renamed field")
	}
}

// The CRD named the webhook with a CA bundle or address the runtime no longer has (its Secret was
// made again, the Service renamed): the API server fails every read that needs conversion. The
// runtime's repair, writing the CRD with the current ones, listed the parents at every served
// version first, through that broken webhook: the list failed and the repair was refused for
// ever. A change of the webhook's client config alone lists nothing.
func TestABrokenWebhookDoesNotBlockItsOwnRepair(t *testing.T) {
	tests := []struct {
		name  string
		stale func(cc *apiextensionsv1.WebhookClientConfig)
	}{
		{name: "a stale CA bundle", stale: func(cc *apiextensionsv1.WebhookClientConfig) { cc.CABundle = []byte("-----OLD CA-----") }},
		{name: "a stale webhook address", stale: func(cc *apiextensionsv1.WebhookClientConfig) { cc.Service.Name = "old-webhook" }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			webhook := testWebhook(t)
			doc := versionedCache(t)
			crd := parentCRDOf(t, doc)
			if _, err := webhook.prepare(t.Context(), doc, crd); err != nil {
				t.Fatal(err)
			}
			tt.stale(crd.Spec.Conversion.Webhook.ClientConfig)
			existing, err := desiredCRD(doc, crd)
			if err != nil {
				t.Fatal(err)
			}
			_ = unstructured.SetNestedStringSlice(existing.Object, []string{"v1"}, "status", "storedVersions")
			client, patched := cacheCluster(existing)
			// what the API server answers a read that needs the webhook the CRD names
			client.PrependReactor("list", "caches", func(a k8stesting.Action) (bool, runtime.Object, error) {
				return true, nil, apierrors.NewInternalError(errors.New(`conversion webhook for versions.example.com/v1, Kind=Cache failed: ` +
					`Post "https://metacel-webhook.metacel-system.svc:443/convert": tls: failed to verify certificate: x509: certificate signed by unknown authority`))
			})
			wrote, err := installerOn(client, webhook).installParentCRD(t.Context(), doc, parentCRDOf(t, doc), []string{"cache"})
			if !wrote || err != nil || *patched != 1 {
				t.Errorf("installParentCRD() = %v, %v (%d patches): want the CRD written with the runtime's webhook", wrote, err, *patched)
			}
		})
	}
}

// A CRD of one version, v1, gets a new version v1alpha1 whose size is at most one character. The
// installer applied it without converting the stored parents to v1alpha1 ("not served before"):
// a parent with 10 replicas does not convert, and every list at v1alpha1 failed on it. A stored
// parent that does not convert to a new version refuses the change, naming it.
func TestANewVersionAStoredParentDoesNotConvertToIsRefused(t *testing.T) {
	tests := []struct {
		name     string
		replicas int64
		refused  string // "": applied
	}{
		{name: "every parent converts", replicas: 3},
		{name: "a parent does not convert", replicas: 10, refused: `would break 1 stored parent(s), so the CRD "caches.versions.example.com" is left as it is and the running version keeps serving: ` +
			`ns/c: does not convert to versions.example.com/v1alpha1: convert Cache "ns/c" from v1 to v1alpha1: the result is not a valid v1alpha1 Cache: spec.size: Too long`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			webhook := testWebhook(t)
			single := singleVersionCache(t)
			existing, err := desiredCRD(single, parentCRDOf(t, single))
			if err != nil {
				t.Fatal(err)
			}
			_ = unstructured.SetNestedStringSlice(existing.Object, []string{"v1"}, "status", "storedVersions")
			client, patched := cacheCluster(existing, storedCache(map[string]any{"replicas": tt.replicas, "template": map[string]any{"image": "redis:7"}}))
			narrow := versionedCache(t, "size: {type: string, pattern: '^[0-9]+$', required: true}", "size: {type: string, pattern: '^[0-9]+$', maxLength: 1, required: true}")
			wrote, err := installerOn(client, webhook).installParentCRD(t.Context(), narrow, parentCRDOf(t, narrow), []string{"cache"})
			switch {
			case tt.refused == "" && (!wrote || err != nil):
				t.Errorf("installParentCRD() = %v, %v: want the CRD applied", wrote, err)
			case tt.refused != "" && (err == nil || !strings.Contains(err.Error(), tt.refused) || *patched > 0):
				t.Errorf("installParentCRD() = %v, %v (%d patches): want it refused with %q", wrote, err, *patched, tt.refused)
			}
		})
	}
}

// earlierRuntimesHash is the hash annotation the runtime before the hash of the declaration wrote
// on doc's CRD: one hash of the whole CRD, with the webhook's client config, without annotations.
func earlierRuntimesHash(t *testing.T, webhook *conversionServer, doc *policy.Document) string {
	t.Helper()
	whole := installedBy(t, webhook, doc)
	whole.SetAnnotations(nil)
	unstructured.RemoveNestedField(whole.Object, "status")
	data, err := json.Marshal(whole.Object)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:8])
}

// On a cluster upgraded from a runtime that annotated its CRDs with one hash of the whole, a CRD was
// taken to hold any declaration: every replica served the converter its sources offered, a refused
// version's too (never written, so the CRD kept the earlier hash), and the stored parents no longer
// converted ("no such key: ref"). Such a CRD holds the one declaration whose whole has its hash.
func TestACRDAnEarlierRuntimeWroteHoldsOneDeclaration(t *testing.T) {
	tests := []struct {
		name string
		// hash is the CRD's hash annotation, which an earlier runtime wrote
		hash func(t *testing.T, webhook *conversionServer) string
		// running is whether the running version converts before the refused one is offered
		running bool
	}{
		{name: "the running version's CRD", running: true, hash: func(t *testing.T, webhook *conversionServer) string {
			return earlierRuntimesHash(t, webhook, versionedCache(t))
		}},
		{name: "a CRD of another declaration", hash: func(*testing.T, *conversionServer) string { return "0123456789abcdef" }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			webhook := testWebhook(t)
			running, refused := versionedCache(t), renamedImage(t)
			webhook.crdDeclares(t.Context(), parentCRDOf(t, running).Name, map[string]string{contract.AnnotationParentSchemaHash: tt.hash(t, webhook)})
			webhook.offerPolicy(t.Context(), parentCRD{doc: running, crd: parentCRDOf(t, running)})
			if _, served := webhook.lookup(schema.GroupKind{Group: "versions.example.com", Kind: "Cache"}); served != tt.running {
				t.Fatalf("the running version's converter serves: %v, want %v", served, tt.running)
			}
			webhook.offerPolicy(t.Context(), parentCRD{doc: refused, crd: parentCRDOf(t, refused)})
			if _, served := webhook.lookup(schema.GroupKind{Group: "versions.example.com", Kind: "Cache"}); !served {
				return // the API server answers that no conversion is known, and converts nothing wrong
			}
			if err := convertsStored(t, webhook); err != nil {
				t.Errorf("a stored v1 Cache of the CRD the cluster holds does not convert: %v", err)
			}
		})
	}
}

// Two policies install one CRD; the cluster's is the first's. The webhook kept one offer per CRD,
// the last a source gave: a replica whose sources' snapshot came before its watch of the CRDs kept
// the second policy's, whose declaration the CRD does not hold, and converted none of its parents.
// Each policy's offer is kept, and the one whose declaration the CRD holds serves, whatever came
// first.
func TestOfThePoliciesThatInstallOneCRDTheOneItHoldsConverts(t *testing.T) {
	tests := []struct {
		name string
		// arrive has webhook meet the sources' offers and the CRD's hash, in some order
		arrive func(ctx context.Context, webhook *conversionServer, offers []parentCRD, crd string, annotations map[string]string)
	}{
		{name: "the offers, then the CRD", arrive: func(ctx context.Context, webhook *conversionServer, offers []parentCRD, crd string, annotations map[string]string) {
			for _, o := range offers {
				webhook.offerPolicy(ctx, o)
			}
			webhook.crdDeclares(ctx, crd, annotations)
		}},
		{name: "the CRD, then the offers", arrive: func(ctx context.Context, webhook *conversionServer, offers []parentCRD, crd string, annotations map[string]string) {
			webhook.crdDeclares(ctx, crd, annotations)
			for _, o := range offers {
				webhook.offerPolicy(ctx, o)
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			webhook := testWebhook(t)
			installer, other := versionedCache(t), versionedCache(t, "name: cache\n", "name: cache-copy\n")
			crd := installedBy(t, webhook, installer)
			offers := []parentCRD{{doc: installer, crd: parentCRDOf(t, installer)}, {doc: other, crd: parentCRDOf(t, other)}}
			tt.arrive(t.Context(), webhook, offers, crd.GetName(), crd.GetAnnotations())
			c, served := webhook.lookup(schema.GroupKind{Group: "versions.example.com", Kind: "Cache"})
			if !served {
				t.Fatal("no converter of Caches, though the CRD holds policy cache's declaration, which the sources offer")
			}
			if p := c.(policyConverter).policy; p != "cache" {
				t.Errorf("Caches convert with policy %q, want cache, whose declaration the CRD holds", p)
			}
		})
	}
}
