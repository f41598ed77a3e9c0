package controller

import (
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	"metacel.dev/metacel/runtime/contract"
	"metacel.dev/metacel/runtime/decide/noop"
	"metacel.dev/metacel/runtime/render"
)

// A mutating admission webhook may change a field metacel sets (an image tag made a digest, a
// default injected in a field the policy writes): the API server then stores, and returns, other
// content than what metacel applied. The no-op check sees the child differ from the policy at
// every sync, and each apply is one the API server turns into nothing, which would count as an
// undone write: a DriftConflict after five, naming no one. So when a write's answer differs from
// what was sent in the fields metacel sets, what admission made of it is remembered with the
// write (childWrites.admitted); while the policy wants the same and the child still holds that,
// the child is as admission leaves it, and is not written again. Another writer's change of those
// fields is a change, written back. Like the rest of childWrites, it is a memory of this process:
// after a restart, the first sync applies once, and learns it again.

// rememberAdmitted remembers, with the write of child, the fields metacel sets as the API server
// returned them (got), when they differ from what it sent: admission changed them. It forgets
// them otherwise.
func (s *parentStates) rememberAdmitted(parent *unstructured.Unstructured, child *render.Child, got *unstructured.Unstructured) {
	var admitted map[string]any
	if got != nil && got.GetResourceVersion() != "" && // an object the API server stored, not a bare answer
		schemaOf(child).ContentNeedsApply(child.Object, got, contract.IsBookkeepingLabel, contract.IsBookkeepingAnnotation) {
		admitted = restrictTo(got.Object, child.Object.Object)
		gotMeta, _ := got.Object["metadata"].(map[string]any)
		wantMeta, _ := child.Object.Object["metadata"].(map[string]any)
		admitted["metadata"] = restrictFields(gotMeta, wantMeta) // the policy's labels and annotations, as admission left them
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if st := s.lastWriteLocked(parent, child); st != nil {
		st.admitted = admitted
	}
}

// admittedAlready reports whether obs holds what admission made of the child metacel wrote last,
// with the same content: writing it again would change nothing.
func (s *parentStates) admittedAlready(parent *unstructured.Unstructured, child *render.Child, obs *unstructured.Unstructured) bool {
	s.mu.Lock()
	var admitted map[string]any
	if st := s.lastWriteLocked(parent, child); st != nil {
		admitted = st.admitted
	}
	s.mu.Unlock()
	if admitted == nil || obs == nil {
		return false
	}
	return !schemaOf(child).ContentNeedsApply(&unstructured.Unstructured{Object: admitted}, obs, contract.IsBookkeepingLabel, contract.IsBookkeepingAnnotation)
}

// lastWriteLocked is what metacel last wrote of the child, when it wrote what the child is now
// (its content hash); nil otherwise. Under s.mu.
func (s *parentStates) lastWriteLocked(parent *unstructured.Unstructured, child *render.Child) *childWrites {
	p := s.byKey[parentKey(parent)]
	if p == nil {
		return nil
	}
	if st := p.writes.get(render.Identity(child.Object)); st != nil && st.written == contentSumOf(child.Object) {
		return st
	}
	return nil
}

// schemaOf is the no-op check's schema of a child's kind.
func schemaOf(child *render.Child) *noop.Schema {
	return noop.SchemaFor(child.Object.GroupVersionKind(), child.Resource.Schema)
}

// restrictTo returns of obj, a child, the fields desired sets but its metadata (the caller puts the
// policy's back): objects field by field, other values (lists, scalars) whole, as obj holds them.
func restrictTo(obj, desired map[string]any) map[string]any {
	out := restrictFields(obj, desired)
	delete(out, "metadata")
	return out
}

func restrictFields(obj, desired map[string]any) map[string]any {
	out := make(map[string]any, len(desired))
	for k, dv := range desired {
		ov, ok := obj[k]
		if !ok {
			continue
		}
		dm, dIsMap := dv.(map[string]any)
		om, oIsMap := ov.(map[string]any)
		if dIsMap && oIsMap {
			out[k] = restrictFields(om, dm)
			continue
		}
		out[k] = runtime.DeepCopyJSONValue(ov)
	}
	return out
}
