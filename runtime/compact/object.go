package compact

import (
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/cache"
)

// Object is an API object as a cache holds it: its type and metadata decoded, the rest as the API
// server sent it: JSON, or for a built-in kind protobuf (protobuf.go). Its metadata is held once:
// ObjectMeta (without the managed fields, and without kubectl's last-applied copy, which the
// runtime never reads), the annotations apart (annotations.go), and the managed fields apart
// (managed.go), which only a decode puts back. It implements metav1.Object, so the informer's
// keys, indexers and event handlers work on it unchanged. Raw, annotations and managed are never
// modified: copies share them.
type Object struct {
	metav1.TypeMeta
	metav1.ObjectMeta
	// Raw is the object as the API server sent it, without its metadata: its JSON, or with
	// Protobuf its kind's protobuf message.
	Raw      []byte
	Protobuf bool
	// Annotations are the object's annotations, key and value in turn, sorted by key. They shadow
	// ObjectMeta's map, which a cached object leaves nil, so that a read of o.Annotations[key]
	// does not compile: GetAnnotations builds a map.
	Annotations annotationPairs
	managed     []managedEntry
	// metaSize is the size of the metadata as the API server sent it (Larger)
	metaSize int
	// fetch reads the object from the API server when its body was not kept (omit.go)
	fetch Fetcher
	// bodyOmitted: the watch stream dropped its body (omitframe.go); a cache keeps it with Omit
	bodyOmitted bool
}

var _ metav1.Object = &Object{}

// DeepCopyObject implements runtime.Object; Raw is shared (it is never modified).
func (o *Object) DeepCopyObject() runtime.Object {
	out := &Object{TypeMeta: o.TypeMeta, Raw: o.Raw, Protobuf: o.Protobuf, Annotations: o.Annotations, managed: o.managed, metaSize: o.metaSize, fetch: o.fetch}
	o.DeepCopyInto(&out.ObjectMeta)
	return out
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
	if o.fetch != nil {
		return o.fetched()
	}
	decode := o.jsonToMap
	if o.Protobuf {
		decode = o.protobufToJSONMap
	}
	m, err := decode()
	if err != nil {
		return nil, fmt.Errorf("decode %s %s/%s from the cache: %w", o.Kind, o.Namespace, o.Name, err)
	}
	return &unstructured.Unstructured{Object: m}, nil
}

// jsonToMap decodes a JSON object's body, with its metadata.
func (o *Object) jsonToMap() (map[string]any, error) {
	m, err := unmarshalObject(o.Raw)
	if err != nil {
		return nil, err
	}
	if m["metadata"], err = o.metadataMap(); err != nil {
		return nil, err
	}
	return m, nil
}

// fullMeta is the object's metadata with its managed fields (a shallow copy: its maps and slices
// are the cache's, only to be read).
func (o *Object) fullMeta() metav1.ObjectMeta {
	meta := o.ObjectMeta
	meta.Annotations = o.GetAnnotations()
	meta.ManagedFields = managedFields(o.managed, o.OwnerReferences)
	return meta
}
