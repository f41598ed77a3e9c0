package controller

import (
	"crypto/sha256"
	"encoding/hex"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"

	"metacel.dev/metacel/runtime/contract"
	"metacel.dev/metacel/runtime/jsonenc"
)

// Some writes the API server will never accept, however often they are sent: a child larger
// than etcd stores, or one its schema or admission rejects. Such a write is not retried with
// backoff; the controller remembers, per parent, the desired child it refused (by a hash of what
// was sent) and does not send that same object again: a sync reports the same failure without a
// write until the parent, its related objects or the policy render something else. The memory
// is only an economy: a restart sends the object once more and finds out again.

// sendUnlessRefused calls write for obj, what the parent's write named id sends, unless the API
// server refused this very object before.
func (s *parentStates) sendUnlessRefused(parent *unstructured.Unstructured, id string, obj *unstructured.Unstructured, write func() error) error {
	key := parentKey(parent)
	if err := s.refusalOf(key, parent.GetUID(), id, obj); err != nil {
		return err
	}
	err := write()
	switch {
	case err == nil:
		s.forgetRefusal(key, id)
	case isRefusal(err):
		s.rememberRefusal(key, parent.GetUID(), id, contentHash(obj), err)
	}
	return err
}

// isRefusal reports whether err is a write the API server will refuse again.
func isRefusal(err error) bool {
	return refusedForGood(err)
}

// refusalOf returns the refusal of this very object for this parent, if any.
func (s *parentStates) refusalOf(key string, uid types.UID, id string, obj *unstructured.Unstructured) error {
	ref, ok := s.refusal(key, uid, id)
	if ok && ref.hash == contentHash(obj) { // hashed out of the lock: it may encode obj
		return ref.err
	}
	return nil
}

// refusal returns what was refused of the write id for the parent of that key and UID, if any.
func (s *parentStates) refusal(key string, uid types.UID, id string) (refusal, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	r := s.byKey[key].seldomRead()
	if r.refused == nil || r.refusedUID != uid {
		return refusal{}, false
	}
	ref, ok := r.refused[id]
	return ref, ok
}

// rememberRefusal remembers that the write id, of content hash, was refused for good.
func (s *parentStates) rememberRefusal(key string, uid types.UID, id, hash string, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	r := s.stateLocked(key).seldomFields()
	if r.refused == nil || r.refusedUID != uid {
		r.refused, r.refusedUID = map[string]refusal{}, uid
	}
	r.refused[id] = refusal{hash: hash, err: err}
}

// forgetRefusal forgets the refusal of the write id, which went through.
func (s *parentStates) forgetRefusal(key, id string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if p := s.byKey[key]; p != nil && p.seldom != nil && p.seldom.refused != nil {
		delete(p.seldom.refused, id)
		if len(p.seldom.refused) == 0 {
			p.seldom.refused, p.seldom.refusedUID = nil, ""
			p.dropSeldomIfEmpty()
		}
	}
}

// contentHash identifies an object by its content, as it would be sent: a rendered child by its
// content-hash annotation, which render computed over what the policy computed of it (metacel's
// bookkeeping aside, which is decided apart and never refused); any other object by a hash of its
// JSON (map keys sorted).
func contentHash(obj *unstructured.Unstructured) string {
	if h, _, _ := unstructured.NestedString(obj.Object, "metadata", "annotations", contract.AnnotationContentHash); h != "" {
		return h
	}
	data, err := jsonenc.Marshal(obj.Object)
	if err != nil {
		return "" // never equal to a real hash's refusal: sent again
	}
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:])
}

// parentKey is the queue key of a parent: namespace/name, or name.
func parentKey(parent metav1.Object) string {
	if parent.GetNamespace() == "" {
		return parent.GetName()
	}
	return parent.GetNamespace() + "/" + parent.GetName()
}
