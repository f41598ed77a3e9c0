package controller

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"sync"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"

	"metacel.dev/metacel/runtime/jsonenc"
	"metacel.dev/metacel/runtime/render"
)

// Some writes the API server will never accept, however often they are sent: a child larger
// than etcd stores, or one its schema or admission rejects. Such a write is not retried with
// backoff; the controller remembers, per parent, the desired child it refused (by a hash of what
// was sent) and does not send that same object again: a sync reports the same failure without a
// write until the parent, its related objects or the policy render something else. The memory
// is only an economy: a restart sends the object once more and finds out again.

// refusedWrites holds, by parent key, the children whose last write was refused for good.
type refusedWrites struct {
	sync.Mutex
	byParent map[string]*refusedOf
}

// refusedOf are one parent's refused children, by child identity.
type refusedOf struct {
	uid      types.UID
	children map[string]refusal
}

type refusal struct {
	hash string
	err  error
}

// writeUnlessRefused calls write for a child, unless the API server refused this very object
// before: then it returns that refusal again without a request. A refusal is remembered; a
// write that goes through forgets the child's.
func (c *Controller) writeUnlessRefused(parent *unstructured.Unstructured, child *render.Child, write func() error) error {
	return c.sendUnlessRefused(parent, render.Identity(child.Object), child.Object, write)
}

// sendUnlessRefused calls write for obj, what the parent's write named id sends, unless the API
// server refused this very object before.
func (c *Controller) sendUnlessRefused(parent *unstructured.Unstructured, id string, obj *unstructured.Unstructured, write func() error) error {
	key := parentKey(parent)
	if err := c.refused.previous(key, parent.GetUID(), id, obj); err != nil {
		return err
	}
	err := write()
	switch {
	case err == nil:
		c.refused.forget(key, id)
	case isRefusal(err):
		c.refused.remember(key, parent.GetUID(), id, obj, err)
	}
	return err
}

// isRefusal reports whether err is a write the API server will refuse again.
func isRefusal(err error) bool {
	var se *syncError
	var perm *permanentError
	return errors.As(err, &se) && !se.retry || errors.As(err, &perm)
}

// previous returns the refusal of this very object for this parent, if any.
func (r *refusedWrites) previous(key string, uid types.UID, id string, obj *unstructured.Unstructured) error {
	r.Lock()
	defer r.Unlock()
	of := r.byParent[key]
	if of == nil || of.uid != uid {
		return nil
	}
	if ref, ok := of.children[id]; ok && ref.hash == contentHash(obj) {
		return ref.err
	}
	return nil
}

func (r *refusedWrites) remember(key string, uid types.UID, id string, obj *unstructured.Unstructured, err error) {
	r.Lock()
	defer r.Unlock()
	if r.byParent == nil {
		r.byParent = map[string]*refusedOf{}
	}
	of := r.byParent[key]
	if of == nil || of.uid != uid {
		of = &refusedOf{uid: uid, children: map[string]refusal{}}
		r.byParent[key] = of
	}
	of.children[id] = refusal{hash: contentHash(obj), err: err}
}

func (r *refusedWrites) forget(key, id string) {
	r.Lock()
	defer r.Unlock()
	if of := r.byParent[key]; of != nil {
		delete(of.children, id)
		if len(of.children) == 0 {
			delete(r.byParent, key)
		}
	}
}

// forgetParent drops what was remembered of a parent that is gone.
func (r *refusedWrites) forgetParent(key string) {
	r.Lock()
	defer r.Unlock()
	delete(r.byParent, key)
}

// contentHash identifies an object by its content, as it would be sent: a rendered child by its
// desired-hash annotation, which render computed over all the rest of it (labels and
// ownerReferences included); any other object by a hash of its JSON (map keys sorted).
func contentHash(obj *unstructured.Unstructured) string {
	if h, _, _ := unstructured.NestedString(obj.Object, "metadata", "annotations", render.AnnotationDesiredHash); h != "" {
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
