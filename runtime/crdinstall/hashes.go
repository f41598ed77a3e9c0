package crdinstall

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strings"

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
// bundle, a new webhook address) changes nothing a stored parent holds. It is HoldsDeclaration of
// the existing CRD's hash annotation, but that a CRD an earlier runtime annotated with a hash of
// its whole is judged with the client config it holds, which may be stale (the Secret made anew,
// the Service renamed): the leader, which reads the whole CRD, repairs it without listing its
// parents through the webhook it names.
func SameDeclaration(existing, desired *unstructured.Unstructured) bool {
	hash := existing.GetAnnotations()[contract.AnnotationParentSchemaHash]
	if hash == "" || strings.Contains(hash, ".") {
		return HoldsDeclaration(hash, desired)
	}
	withTheirs := desired.DeepCopy()
	if cc, found, _ := unstructured.NestedFieldCopy(existing.Object, clientConfigPath...); found {
		_ = unstructured.SetNestedField(withTheirs.Object, cc, clientConfigPath...)
	}
	whole, err := earlierHashOf(withTheirs)
	return err == nil && whole == hash
}

// HoldsDeclaration reports whether a CRD annotated with hash (contract.AnnotationParentSchemaHash)
// holds the declaration desired (from Desired, with the webhook's client config the runtime
// writes) was made from. A CRD an earlier runtime annotated with one hash of the whole holds the
// declaration whose whole, with that client config, has that hash: what that runtime wrote for it.
// Every replica tells that from what all of them read alike, the policy sources and the CA bundle
// of the Secret they share, and again after a restart, with no write to wait for: a standby
// converts from its start, and a refused version, which is never written, never converts. The
// leader writes the CRD again with the hash of its declaration (Decide: an Update, which lists no
// parents when SameDeclaration), after which no CA bundle is needed to tell. A CRD whose whole was
// written with another client config (an address or CA bundle since replaced) holds none until it
// is written again.
func HoldsDeclaration(hash string, desired *unstructured.Unstructured) bool {
	switch {
	case hash == "":
		return false
	case !strings.Contains(hash, "."):
		whole, err := earlierHashOf(desired)
		return err == nil && whole == hash
	}
	return DeclarationOfHash(hash) == DeclarationOf(desired)
}

// earlierHashOf is the hash an earlier runtime annotated desired's CRD with: of the whole, without
// annotations. It is the hash of a CRD of one version the runtime writes now too, which names no
// webhook.
func earlierHashOf(desired *unstructured.Unstructured) (string, error) {
	whole := desired.DeepCopy()
	whole.SetAnnotations(nil)
	return hashOf(whole.Object)
}
