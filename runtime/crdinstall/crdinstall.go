package crdinstall

import (
	"fmt"
	"slices"
	"strings"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	"metacel.dev/metacel/runtime/contract"
)

// Action is what the runtime does with a policy's CRD.
type Action string

// The actions.
const (
	// Leave: the CRD is what the policy declares.
	Leave Action = "Leave"
	// Create: there is no CRD of that name.
	Create Action = "Create"
	// Update: the CRD the runtime installed is not what the policy declares: another declaration,
	// whose stored parents are checked (Breaks) before it is applied; or this one, naming another
	// webhook or not carrying the declaration its parents convert with
	// (contract.AnnotationParentDeclaration), which changes nothing a parent holds.
	Update Action = "Update"
	// Refuse: the CRD is not the runtime's to write.
	Refuse Action = "Refuse"
)

// Decision is what to do with a policy's CRD, and why when it is refused.
type Decision struct {
	Action Action
	Why    string
}

// maxDeclarationBytes bounds the declaration a CRD carries: the API server takes at most 256 KiB
// of annotations on an object, and the CRD's other annotations, its users' included, need room.
const maxDeclarationBytes = 128 << 10

// Desired returns crd as the runtime applies it for the named policy: labelled as installed by it,
// and annotated with the hash of the whole (hashes.go): of its declaration, and of the webhook's
// client config when it names one. A CRD whose parents convert through the webhook carries, beside
// it, declaration (the policy's, policy.ParentDeclaration; left out over maxDeclarationBytes, and
// not hashed, as the hash is of what the CRD is): what every replica converts them with when no
// policy source declares what the CRD holds any more (a change of the policy refused, or the
// policy removed, then a restart).
func Desired(crd *apiextensionsv1.CustomResourceDefinition, policy string, declaration []byte) (*unstructured.Unstructured, error) {
	c := crd.DeepCopy()
	if c.Labels == nil {
		c.Labels = map[string]string{}
	}
	c.Labels[contract.LabelInstalledBy] = policy
	obj, err := runtime.DefaultUnstructuredConverter.ToUnstructured(c)
	if err != nil {
		return nil, fmt.Errorf("convert the CRD %q: %w", crd.Name, err)
	}
	u := &unstructured.Unstructured{Object: obj}
	unstructured.RemoveNestedField(u.Object, "metadata", "creationTimestamp")
	unstructured.RemoveNestedField(u.Object, "status")
	hash, err := hashOfCRD(u.Object)
	if err != nil {
		return nil, err
	}
	annotations := map[string]string{contract.AnnotationParentSchemaHash: hash}
	if converts := crd.Spec.Conversion != nil && crd.Spec.Conversion.Strategy == apiextensionsv1.WebhookConverter; converts &&
		len(declaration) > 0 && len(declaration) <= maxDeclarationBytes {
		annotations[contract.AnnotationParentDeclaration] = string(declaration)
	}
	u.SetAnnotations(annotations)
	return u, nil
}

// Decide says what to do with the CRD the policy declares (desired, from Desired) given the one of
// that name in the cluster (existing, nil when there is none). running tells whether another
// policy of that name runs: a CRD installed for a policy that runs is that policy's.
func Decide(existing, desired *unstructured.Unstructured, running func(policy string) bool) Decision {
	if existing == nil {
		return Decision{Action: Create}
	}
	policy := desired.GetLabels()[contract.LabelInstalledBy]
	installer, installed := existing.GetLabels()[contract.LabelInstalledBy]
	switch {
	case !installed:
		return Decision{Action: Refuse, Why: foreign(existing, policy)}
	case installer != policy && running(installer):
		return Decision{Action: Refuse, Why: fmt.Sprintf("the CRD %q is installed by policy %q, which runs: "+
			"one parent resource has one policy; remove parentSchema.install from one of them", existing.GetName(), installer)}
	case sameAnnotation(existing, desired, contract.AnnotationParentSchemaHash) && carriesDeclaration(existing, desired):
		return Decision{Action: Leave}
	}
	return Decision{Action: Update}
}

// sameAnnotation reports whether two objects have the same value, or none, at an annotation.
func sameAnnotation(a, b *unstructured.Unstructured, key string) bool {
	return a.GetAnnotations()[key] == b.GetAnnotations()[key]
}

// carriesDeclaration reports whether the CRD existing carries the declaration desired does, when
// desired carries one. One left behind where desired carries none (the parent has one version
// now) is left: server-side apply cannot remove an annotation another manager owns too (the CRD
// applied by hand from `metacel crd`), so an update would change nothing, at every load; and it
// converts nothing, as its hash is not the CRD's.
func carriesDeclaration(existing, desired *unstructured.Unstructured) bool {
	_, wants := desired.GetAnnotations()[contract.AnnotationParentDeclaration]
	return !wants || sameAnnotation(existing, desired, contract.AnnotationParentDeclaration)
}

// foreign says whose a CRD the runtime did not install is, from the field managers of its spec,
// and how to hand it over.
func foreign(crd *unstructured.Unstructured, policy string) string {
	var owners []string
	for _, m := range crd.GetManagedFields() {
		if m.Subresource == "" && !slices.Contains(owners, m.Manager) {
			owners = append(owners, m.Manager)
		}
	}
	owner := "someone else"
	if len(owners) > 0 {
		owner = "field manager " + quoteAll(owners)
	}
	return fmt.Sprintf("the CRD %q was not installed by metacel (it is %s's) and is left as it is: "+
		"remove parentSchema.install and keep the CRD up to date yourself (metacel crd prints it), "+
		"or let metacel take it over: kubectl label crd %s %s=%s", crd.GetName(), owner, crd.GetName(), contract.LabelInstalledBy, policy)
}

func quoteAll(names []string) string {
	q := make([]string, len(names))
	for i, n := range names {
		q[i] = fmt.Sprintf("%q", n)
	}
	return strings.Join(q, ", ")
}

// StoredVersionsDropped returns the versions the API server still stores parents at (the existing
// CRD's status.storedVersions) that the new CRD would stop serving or declare no more, other than
// its storage version: a change the runtime refuses until the stored parents have been migrated
// to the storage version and storedVersions trimmed (package storagemigration), since a parent
// stored at a version the CRD no longer declares cannot be read.
func StoredVersionsDropped(existing *unstructured.Unstructured, crd *apiextensionsv1.CustomResourceDefinition) []string {
	stored, _, _ := unstructured.NestedStringSlice(existing.Object, "status", "storedVersions")
	var out []string
	for _, v := range stored {
		i := slices.IndexFunc(crd.Spec.Versions, func(d apiextensionsv1.CustomResourceDefinitionVersion) bool { return d.Name == v })
		if i < 0 || !crd.Spec.Versions[i].Served && !crd.Spec.Versions[i].Storage {
			out = append(out, v)
		}
	}
	return out
}

// DroppedVersionsMessage says why a CRD change that drops stored versions is refused, and what to
// do first.
func DroppedVersionsMessage(crd string, dropped []string) string {
	return fmt.Sprintf("the CRD %q still stores parents at %s (its status.storedVersions), which the new parentSchema no longer serves: "+
		"keep serving it until the runtime has migrated the stored parents to the storage version and trimmed storedVersions "+
		"(kubectl get crd %s -o jsonpath='{.status.storedVersions}' shows it), then stop serving or remove it", crd, quoteAll(dropped), crd)
}
