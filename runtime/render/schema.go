package render

import (
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"metacel.dev/metacel/runtime/contract"
	"metacel.dev/metacel/runtime/policy"
)

// checkSchema rejects a child the API server would refuse (Admit): one that does not fit the
// schema of its kind (a field its kind does not have, a value of the wrong type, two items of a
// keyed list with one key), or, of a built-in kind, one Kubernetes' validation of the kind refuses
// (a name too long, a label value with '@', a port out of range, a selector that does not select
// the template's labels, a six-field schedule). The render fails with InvalidChild, and no request
// is made. A template's literal fields were checked when the policy loaded; this catches what
// expressions computed and what expression children built. A kind whose schema is not known (a
// guessed resource) is not checked.
//
// The object is checked as it will be applied, marks included. One the API server already holds
// exactly as rendered (the observed child carries its desired hash) is not checked again: a
// converged parent's sync costs no check.
func (r *run) checkSchema(ch *policy.CompiledChild, obj *unstructured.Unstructured, res policy.ChildResourceInfo) error {
	if res.ObjectSchema == nil || r.heldAsRendered(obj) {
		return nil
	}
	if err := Admit(obj, res.ObjectSchema); err != nil {
		return childError(ch.Path, "%w", err)
	}
	return nil
}

// maxSchemaProblems bounds how many problems of one child its error names.
const maxSchemaProblems = 3

// heldAsRendered reports whether the observed child with the identity of obj carries obj's content
// hash: the API server accepted this very object.
func (r *run) heldAsRendered(obj *unstructured.Unstructured) bool {
	if len(r.in.Observed) == 0 {
		return false
	}
	observed, ok := r.observedByIdentity()[Identity(obj)]
	if !ok {
		return false
	}
	hash := annotation(obj.Object, contract.AnnotationContentHash)
	return hash != "" && annotation(observed.Object, contract.AnnotationContentHash) == hash
}

// observedByIdentity indexes the observed children by Identity, once per render.
func (r *run) observedByIdentity() map[string]*unstructured.Unstructured {
	if r.observed == nil {
		r.observed = map[string]*unstructured.Unstructured{}
		for _, objs := range r.in.Observed {
			for _, o := range objs {
				r.observed[Identity(o)] = o
			}
		}
	}
	return r.observed
}

// annotation reads one annotation of an object's content without copying its annotations.
func annotation(obj map[string]any, key string) string {
	meta, _ := obj["metadata"].(map[string]any)
	annotations, _ := meta["annotations"].(map[string]any)
	v, _ := annotations[key].(string)
	return v
}
