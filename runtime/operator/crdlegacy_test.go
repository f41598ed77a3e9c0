package operator

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	k8stesting "k8s.io/client-go/testing"

	"metacel.dev/metacel/runtime/contract"
	"metacel.dev/metacel/runtime/crdinstall"
)

// A CRD an earlier runtime wrote (one hash of the whole) naming a CA bundle the runtime no longer
// has (the Secret made again): the leader's repair listed the parents through the broken webhook,
// and was refused at every retry. The CRD is written with the runtime's webhook, with no list.
func TestALegacyCRDWithAStaleBundleIsRepaired(t *testing.T) {
	webhook := testWebhook(t)
	doc := versionedCache(t)
	crd := parentCRDOf(t, doc)
	if _, err := webhook.prepare(t.Context(), doc, crd); err != nil {
		t.Fatal(err)
	}
	crd.Spec.Conversion.Webhook.ClientConfig.CABundle = []byte("-----OLD CA-----")
	existing, err := crdinstall.Desired(crd, "cache", nil) // an earlier runtime's: no declaration carried
	if err != nil {
		t.Fatal(err)
	}
	whole := existing.DeepCopy()
	whole.SetAnnotations(nil)
	data, _ := json.Marshal(whole.Object)
	sum := sha256.Sum256(data)
	existing.SetAnnotations(map[string]string{contract.AnnotationParentSchemaHash: hex.EncodeToString(sum[:8])})
	_ = unstructured.SetNestedStringSlice(existing.Object, []string{"v1"}, "status", "storedVersions")
	webhook.offerPolicy(t.Context(), parentCRD{doc: doc, crd: parentCRDOf(t, doc)})
	webhook.crdDeclares(t.Context(), crd.Name, existing.GetAnnotations())
	client, patched := cacheCluster(existing)
	client.PrependReactor("list", "caches", func(a k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewInternalError(errors.New(`conversion webhook for versions.example.com/v1, Kind=Cache failed: x509: certificate signed by unknown authority`))
	})
	wrote, err := installerOn(client, webhook).installParentCRD(t.Context(), doc, parentCRDOf(t, doc), []string{"cache"})
	if !wrote || err != nil || *patched != 1 {
		t.Errorf("installParentCRD() = %v, %v (%d patches): want the CRD written with the runtime's webhook", wrote, err, *patched)
	}
}
