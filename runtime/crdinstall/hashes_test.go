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

// A replica that serves the conversion webhook knows which converter a CRD's parents need from
// the CRD's hash annotation: its declaration's part, which a new CA bundle does not change. A CRD
// an earlier runtime annotated with one hash of the whole is taken to hold any declaration, as
// that runtime took it.
func TestTheHashTellsTheDeclarationApartFromTheWebhook(t *testing.T) {
	v1 := websiteCRD(map[string]apiextensionsv1.JSONSchemaProps{"html": {Type: "string"}})
	v2 := websiteCRD(map[string]apiextensionsv1.JSONSchemaProps{"html": {Type: "string"}, "replicas": {Type: "integer"}})
	declaration := func(crd *apiextensionsv1.CustomResourceDefinition) string {
		d, err := DeclarationHash(crd, "website")
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	hash := func(crd *apiextensionsv1.CustomResourceDefinition) string {
		return desired(t, crd, "website").GetAnnotations()[contract.AnnotationParentSchemaHash]
	}
	tests := []struct {
		name        string
		hash        string
		declaration string
		want        bool
	}{
		{name: "the CRD of the declaration", hash: hash(withWebhook(v1, "CA")), declaration: declaration(withWebhook(v1, "")), want: true},
		{name: "the CRD of the declaration, with another CA bundle", hash: hash(withWebhook(v1, "new CA")), declaration: declaration(withWebhook(v1, "old CA")), want: true},
		{name: "the CRD of another declaration", hash: hash(withWebhook(v1, "CA")), declaration: declaration(withWebhook(v2, "CA")), want: false},
		{name: "a CRD an earlier runtime annotated", hash: "0123456789abcdef", declaration: declaration(v2), want: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := HoldsDeclaration(tt.hash, tt.declaration); got != tt.want {
				t.Errorf("HoldsDeclaration(%q, %q) = %v, want %v", tt.hash, tt.declaration, got, tt.want)
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
		u.SetAnnotations(nil)
		whole, err := hashOf(u.Object)
		if err != nil {
			t.Fatal(err)
		}
		u.SetAnnotations(map[string]string{contract.AnnotationParentSchemaHash: whole})
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
		{name: "an earlier runtime's hash, another CA bundle", existing: earlier(withWebhook(v1, "old CA")), desired: withWebhook(v1, "new CA"), want: false},
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
