package compact

import (
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"metacel.dev/metacel/runtime/jsonenc"
	"metacel.dev/metacel/runtime/projection"
)

// Responses reads the objects the API server returns for writes (package apply's
// ResponseDecoder) with this package's decoders. A write returns the whole object it wrote; the
// API machinery's decoder reads it twice (once with encoding/json to find its kind, once into
// maps), which was an eighth of the runtime's CPU in a converge that creates a child per parent.
type Responses struct{}

// Object decodes a response's object whole, managed fields included, in one validating pass.
func (Responses) Object(data []byte) (*unstructured.Unstructured, error) {
	m, err := unmarshalObject(data)
	if err != nil {
		return nil, fmt.Errorf("decode the API server's response: %w", err)
	}
	return &unstructured.Unstructured{Object: m}, nil
}

// Metadata decodes only a response's metadata, as the caches hold it in ObjectMeta (without the
// managed fields); the rest is skipped unread.
func (Responses) Metadata(data []byte) (*metav1.ObjectMeta, error) {
	meta := &metav1.ObjectMeta{}
	err := eachField(data, func(key string, value []byte) error {
		if key == "metadata" && !isNull(value) {
			return decodeObjectMeta(value, meta, nil)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("decode the API server's response: %w", err)
	}
	intern(meta)
	return meta, nil
}

// Decode reads one object's JSON as a list or watch of this package puts it in a cache: its
// metadata decoded (the managed fields apart), and the rest of its bytes kept for Unstructured.
func Decode(data []byte) (*Object, error) {
	obj, err := decodeObject(data)
	if err != nil {
		return nil, err
	}
	o, ok := obj.(*Object)
	if !ok {
		return nil, fmt.Errorf("a %T, not an object", obj)
	}
	return o, nil
}

// AsCached returns an object a write returned as a cache that keeps keep holds it (package
// projection): decoded as a list or watch decodes it, with only what keep keeps of its body, the
// body shared with the objects alike (Shared). Only the size cap is not applied (Omit): the
// object is held for seconds, and a read of it would cost a request. The controller remembers
// the children it created in this form until the cache delivers them: the decoded create
// response, its managed fields whole, took about 10 KB a Pod, and a converge of 1,000 parents
// held a thousand at once. Its body is JSON with its keys sorted; a Pod the cache holds from
// its protobuf message, once shared, has them in its type's order, so the two share no body.
func AsCached(u *unstructured.Unstructured, keep *projection.Fields) (*Object, error) {
	data, err := jsonenc.Marshal(u.Object)
	if err != nil {
		return nil, fmt.Errorf("encode %s %s/%s: %w", u.GetKind(), u.GetNamespace(), u.GetName(), err)
	}
	o, err := Decode(data)
	if err != nil {
		return nil, err
	}
	if o, err = o.Project(keep); err != nil {
		return nil, err
	}
	return o.Shared(), nil
}
