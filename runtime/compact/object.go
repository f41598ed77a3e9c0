package compact

import (
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/tools/cache"
)

// Object is an API object as a cache holds it: its type and metadata decoded, the rest as the API
// server sent it: JSON (without its kind and apiVersion, which the Object holds), or for a
// built-in kind protobuf (protobuf.go). Its type and metadata are held once: in heldType and
// heldMeta (meta.go: ObjectMeta's fields, without the managed fields, and without kubectl's
// last-applied copy, which the runtime never reads), the labels and annotations as slices
// (pairs.go), and the managed fields apart (managed.go), which only a decode puts back. It
// implements metav1.Object, so the informer's keys, indexers and event handlers work on it
// unchanged. Raw, the labels, the annotations and managed are never modified: copies share them.
type Object struct {
	heldType
	heldMeta
	// Raw is the object as the API server sent it, without its metadata: its JSON, or with
	// Protobuf its kind's protobuf message.
	Raw     []byte
	managed []managedEntry
	// metaSize is the size of the metadata as the API server sent it (Larger)
	metaSize int32
	Protobuf bool
}

var _ metav1.Object = &Object{}

// NewObject is an object of typ and m whose body is raw, as a decoder of the API server's JSON
// would make it (tests make cached objects with it).
func NewObject(typ metav1.TypeMeta, m metav1.ObjectMeta, raw []byte) *Object {
	o := &Object{Raw: raw}
	o.setTypeMeta(typ)
	o.setMeta(&m)
	return o
}

// GetObjectKind implements runtime.Object.
func (o *Object) GetObjectKind() schema.ObjectKind { return &o.heldType }

// DeepCopyObject implements runtime.Object; Raw is shared (it is never modified).
func (o *Object) DeepCopyObject() runtime.Object {
	return &Object{heldType: o.heldType, heldMeta: o.deepCopy(), Raw: o.Raw, Protobuf: o.Protobuf, managed: o.managed, metaSize: o.metaSize}
}

// Unstructured returns the object a cache holds as an unstructured object: a *Object is decoded
// afresh (the caller may keep or change it), or read from the API server when its body was not
// kept (Omit), an *unstructured.Unstructured (a cache not made by
// ListWatch, in tests) is returned as it is, the cache's own, to be read only. A deleted object
// whose final state is unknown is unwrapped.
func Unstructured(obj any) (*unstructured.Unstructured, error) {
	if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = d.Obj
	}
	switch o := obj.(type) {
	case *unstructured.Unstructured:
		return o, nil
	case *Object:
		return o.decode()
	default:
		return nil, fmt.Errorf("not an API object: %T", obj)
	}
}

func (o *Object) decode() (*unstructured.Unstructured, error) {
	if o.fetches() {
		return o.fetched()
	}
	decode := o.jsonToMap
	if o.Protobuf {
		decode = o.protobufToJSONMap
	}
	m, err := decode()
	if err != nil {
		return nil, fmt.Errorf("decode %s %s/%s from the cache: %w", o.kind(), o.namespace, o.name, err)
	}
	return &unstructured.Unstructured{Object: m}, nil
}

// jsonToMap decodes a JSON object's body, with its type and metadata.
func (o *Object) jsonToMap() (map[string]any, error) {
	m, err := unmarshalObject(o.body())
	if err != nil {
		return nil, err
	}
	t := o.typeMeta()
	if t.Kind != "" {
		m["kind"] = t.Kind
	}
	if t.APIVersion != "" {
		m["apiVersion"] = t.APIVersion
	}
	if m["metadata"], err = o.metadataMap(); err != nil {
		return nil, err
	}
	return m, nil
}

// fullMeta is the object's metadata with its managed fields (a shallow copy: its maps and slices
// are the cache's, only to be read).
func (o *Object) fullMeta() metav1.ObjectMeta {
	meta := o.objectMeta()
	meta.ManagedFields = managedFields(o.managed, o.ownerReferences)
	return meta
}
