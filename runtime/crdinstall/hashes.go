package crdinstall

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strings"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	"metacel.dev/metacel/runtime/contract"
)

// clientConfigPath is where a CRD names its conversion webhook and the CA that verifies it.
var clientConfigPath = []string{"spec", "conversion", "webhook", "clientConfig"}

// hashOfCRD is the hash a CRD is annotated with (contract.AnnotationParentSchemaHash): the hash of
// its declaration, then, after a dot, that of its webhook's client config when it names one. The
// two are apart because they change apart: a new CA bundle or webhook address changes nothing a
// parent holds (SameDeclaration), and a replica that serves the webhook knows which converter the
// CRD's parents need from the declaration alone (DeclarationOf).
func hashOfCRD(obj map[string]any) (string, error) {
	declaration := runtime.DeepCopyJSON(obj)
	unstructured.RemoveNestedField(declaration, clientConfigPath...)
	hash, err := hashOf(declaration)
	if err != nil {
		return "", err
	}
	cc, ok, _ := unstructured.NestedFieldNoCopy(obj, clientConfigPath...)
	if !ok {
		return hash, nil
	}
	ccHash, err := hashOf(cc)
	if err != nil {
		return "", err
	}
	return hash + "." + ccHash, nil
}

// hashOf is the hash of a value's JSON (encoding/json sorts map keys: the same value, the same
// hash).
func hashOf(v any) (string, error) {
	data, err := json.Marshal(v)
	if err != nil {
		return "", fmt.Errorf("hash the CRD: %w", err)
	}
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:8]), nil
}

// DeclarationOf is the hash of the declaration a CRD (from Desired, or as the API server holds
// one Desired gave) was made from, without its webhook's client config; "" for a CRD the runtime
// did not annotate.
func DeclarationOf(crd *unstructured.Unstructured) string {
	return DeclarationOfHash(crd.GetAnnotations()[contract.AnnotationParentSchemaHash])
}

// DeclarationOfHash is the declaration's part of a CRD's hash annotation.
func DeclarationOfHash(hash string) string {
	declaration, _, _ := strings.Cut(hash, ".")
	return declaration
}

// SameDeclaration reports whether the CRD in the cluster (existing) was made from the declaration
// desired (from Desired) was, their webhook's client config aside: a change between them (a new CA
// bundle, a new webhook address) changes nothing a stored parent holds. A CRD an earlier runtime
// annotated with one hash of the whole is the same when that hash is desired's whole.
func SameDeclaration(existing, desired *unstructured.Unstructured) bool {
	hash := existing.GetAnnotations()[contract.AnnotationParentSchemaHash]
	if hash == "" {
		return false
	}
	if !strings.Contains(hash, ".") {
		legacy := desired.DeepCopy()
		legacy.SetAnnotations(nil)
		whole, err := hashOf(legacy.Object)
		return err == nil && whole == hash
	}
	return DeclarationOf(existing) == DeclarationOf(desired)
}

// HoldsDeclaration reports whether a CRD annotated with hash (contract.AnnotationParentSchemaHash)
// holds the declaration whose hash is declaration. A CRD an earlier runtime annotated, with one
// hash of the whole, does not tell its declaration apart: it is taken to hold any, as that runtime
// took it, until the runtime writes it again.
func HoldsDeclaration(hash, declaration string) bool {
	d, _, found := strings.Cut(hash, ".")
	return !found || d == declaration
}

// DeclarationHash is the hash of the declaration of crd as Desired applies it for the named
// policy, its webhook's client config aside: what HoldsDeclaration compares.
func DeclarationHash(crd *apiextensionsv1.CustomResourceDefinition, policy string) (string, error) {
	u, err := Desired(crd, policy)
	if err != nil {
		return "", err
	}
	return DeclarationOf(u), nil
}
