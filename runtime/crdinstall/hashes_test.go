package crdinstall

import (
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"metacel.dev/metacel/runtime/contract"
)

// withWebhook is crd converted through a webhook verified by caBundle.
func withWebhook(crd *apiextensionsv1.CustomResourceDefinition, caBundle string) *apiextensionsv1.CustomResourceDefinition {
	c := crd.DeepCopy()
	c.Spec.Conversion = &apiextensionsv1.CustomResourceConversion{Strategy: apiextensionsv1.WebhookConverter,
		Webhook: &apiextensionsv1.WebhookConversion{ConversionReviewVersions: []string{"v1"},
			ClientConfig: &apiextensionsv1.WebhookClientConfig{CABundle: []byte(caBundle)}}}
	return c
}

// earlierHash is the hash annotation an earlier runtime wrote on crd: one hash of the whole.
func earlierHash(t *testing.T, crd *apiextensionsv1.CustomResourceDefinition) string {
	t.Helper()
	u := desired(t, crd, "website")
	u.SetAnnotations(nil)
	whole, err := hashOf(u.Object)
	if err != nil {
		t.Fatal(err)
	}
	return whole
}

// A replica that serves the conversion webhook knows which converter a CRD's parents need from
// the CRD's hash annotation: its declaration's part, which a new CA bundle does not change. A CRD
// an earlier runtime annotated with one hash of the whole holds the one declaration whose whole
// has that hash: a refused version's converter never serves for it.
func TestTheHashTellsTheDeclarationApartFromTheWebhook(t *testing.T) {
	v1 := websiteCRD(map[string]apiextensionsv1.JSONSchemaProps{"html": {Type: "string"}})
	v2 := websiteCRD(map[string]apiextensionsv1.JSONSchemaProps{"html": {Type: "string"}, "replicas": {Type: "integer"}})
	hash := func(crd *apiextensionsv1.CustomResourceDefinition) string {
		return desired(t, crd, "website").GetAnnotations()[contract.AnnotationParentSchemaHash]
	}
	tests := []struct {
		name    string
		hash    string
		desired *apiextensionsv1.CustomResourceDefinition
		want    bool
	}{
		{name: "the CRD of the declaration", hash: hash(withWebhook(v1, "CA")), desired: withWebhook(v1, "CA"), want: true},
		{name: "the CRD of the declaration, with another CA bundle", hash: hash(withWebhook(v1, "old CA")), desired: withWebhook(v1, "new CA"), want: true},
		{name: "the CRD of another declaration", hash: hash(withWebhook(v1, "CA")), desired: withWebhook(v2, "CA"), want: false},
		{name: "the CRD of one version", hash: hash(v1), desired: v1, want: true},
		{name: "no hash", hash: "", desired: withWebhook(v1, "CA"), want: false},
		{name: "an earlier runtime's CRD of the declaration", hash: earlierHash(t, withWebhook(v1, "CA")), desired: withWebhook(v1, "CA"), want: true},
		{name: "an earlier runtime's CRD of another declaration", hash: earlierHash(t, withWebhook(v1, "CA")), desired: withWebhook(v2, "CA"), want: false},
		{name: "an earlier runtime's CRD, another CA bundle", hash: earlierHash(t, withWebhook(v1, "old CA")), desired: withWebhook(v1, "new CA"), want: false},
		{name: "an earlier runtime's CRD of a declaration unknown", hash: "0123456789abcdef", desired: withWebhook(v2, "CA"), want: false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := HoldsDeclaration(tt.hash, desired(t, tt.desired, "website")); got != tt.want {
				t.Errorf("HoldsDeclaration(%q) = %v, want %v", tt.hash, got, tt.want)
			}
		})
	}
}

// A CRD of one version names no webhook: its hash is the hash of the whole, as earlier runtimes
// wrote it, so that an upgrade writes none of them again.
func TestTheHashOfACRDWithoutWebhookIsTheHashOfTheWhole(t *testing.T) {
	u := desired(t, websiteCRD(map[string]apiextensionsv1.JSONSchemaProps{"html": {Type: "string"}}), "website")
	hash := u.GetAnnotations()[contract.AnnotationParentSchemaHash]
	whole := u.DeepCopy()
	whole.SetAnnotations(nil)
	if want, _ := hashOf(whole.Object); hash != want {
		t.Errorf("the hash of a CRD without webhook is %q, want the hash of the whole %q", hash, want)
	}
}

// An update that changes only the webhook's client config changes nothing a stored parent holds:
// the installer lists no parents for it, through a webhook that may be the broken one.
func TestSameDeclaration(t *testing.T) {
	v1 := websiteCRD(map[string]apiextensionsv1.JSONSchemaProps{"html": {Type: "string"}})
	v2 := websiteCRD(map[string]apiextensionsv1.JSONSchemaProps{"html": {Type: "string"}, "replicas": {Type: "integer"}})
	earlier := func(crd *apiextensionsv1.CustomResourceDefinition) *unstructured.Unstructured {
		u := desired(t, crd, "website")
		u.SetAnnotations(map[string]string{contract.AnnotationParentSchemaHash: earlierHash(t, crd)})
		return u
	}
	tests := []struct {
		name     string
		existing *unstructured.Unstructured
		desired  *apiextensionsv1.CustomResourceDefinition
		want     bool
	}{
		{name: "another CA bundle", existing: desired(t, withWebhook(v1, "old CA"), "website"), desired: withWebhook(v1, "new CA"), want: true},
		{name: "another declaration", existing: desired(t, withWebhook(v1, "CA"), "website"), desired: withWebhook(v2, "CA"), want: false},
		{name: "an earlier runtime's hash of the same CRD", existing: earlier(withWebhook(v1, "CA")), desired: withWebhook(v1, "CA"), want: true},
		// judged with the client config it names: a stale one is repaired without a list through it
		{name: "an earlier runtime's hash, another CA bundle", existing: earlier(withWebhook(v1, "old CA")), desired: withWebhook(v1, "new CA"), want: true},
		{name: "an earlier runtime's hash of another declaration", existing: earlier(withWebhook(v1, "old CA")), desired: withWebhook(v2, "new CA"), want: false},
		{name: "no hash", existing: &unstructured.Unstructured{Object: map[string]any{}}, desired: v1, want: false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := SameDeclaration(tt.existing, desired(t, tt.desired, "website")); got != tt.want {
				t.Errorf("SameDeclaration() = %v, want %v", got, tt.want)
			}
		})
	}
}
