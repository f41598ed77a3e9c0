package compact

import (
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/cache"
)

// Object is an API object as a cache holds it: its type and metadata decoded (without the
// managed fields and kubectl's last-applied copy, which only the full object carries), the rest
// as the API server sent it: JSON, or for a built-in kind protobuf (protobuf.go). It implements
// metav1.Object, so the informer's keys, indexers and event handlers work on it unchanged. Raw
// is never modified: copies share it.
type Object struct {
	metav1.TypeMeta
	metav1.ObjectMeta
	// Raw is the whole object as the API server sent it: its JSON, or with Protobuf its kind's
	// protobuf message.
	Raw      []byte
	Protobuf bool
	// fetch reads the object from the API server when its body was not kept (omit.go)
	fetch Fetcher
	// bodyOmitted: the watch stream dropped its body (omitframe.go); a cache keeps it with Omit
	bodyOmitted bool
	// metaInObjectMeta: Raw's metadata holds only the managed fields, the rest is ObjectMeta
	// (a projected message: project.go)
	metaInObjectMeta bool
}

var _ metav1.Object = &Object{}

// DeepCopyObject implements runtime.Object; Raw is shared (it is never modified).
func (o *Object) DeepCopyObject() runtime.Object {
	out := &Object{TypeMeta: o.TypeMeta, Raw: o.Raw, Protobuf: o.Protobuf, fetch: o.fetch, metaInObjectMeta: o.metaInObjectMeta}
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
	decode := unmarshalObject
	if o.Protobuf {
		decode = o.protobufToJSONMap
	}
	m, err := decode(o.Raw)
	if err != nil {
		return nil, fmt.Errorf("decode %s %s/%s from the cache: %w", o.Kind, o.Namespace, o.Name, err)
	}
	return Slim(&unstructured.Unstructured{Object: m}), nil
}
