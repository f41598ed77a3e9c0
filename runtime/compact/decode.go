package compact

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	kjson "k8s.io/apimachinery/pkg/runtime/serializer/json"
	"k8s.io/apimachinery/pkg/types"
	utiljson "k8s.io/apimachinery/pkg/util/json"
)

// head is the part of an object Decode reads: what keys, indexes and routes it in a cache.
type head struct {
	metav1.TypeMeta `json:",inline"`
	Metadata        struct {
		Name              string                  `json:"name"`
		GenerateName      string                  `json:"generateName"`
		Namespace         string                  `json:"namespace"`
		UID               types.UID               `json:"uid"`
		ResourceVersion   string                  `json:"resourceVersion"`
		Generation        int64                   `json:"generation"`
		CreationTimestamp metav1.Time             `json:"creationTimestamp"`
		DeletionTimestamp *metav1.Time            `json:"deletionTimestamp"`
		Labels            map[string]string       `json:"labels"`
		Annotations       map[string]string       `json:"annotations"`
		OwnerReferences   []metav1.OwnerReference `json:"ownerReferences"`
		Finalizers        []string                `json:"finalizers"`
	} `json:"metadata"`
}

// decodeObject reads an object: a Status (the API server's error, in a watch event or a response)
// as a *metav1.Status, anything else as an *Object holding a copy of data.
func decodeObject(data []byte) (runtime.Object, error) {
	var h head
	if err := utiljson.Unmarshal(data, &h); err != nil {
		return nil, fmt.Errorf("decode an object's metadata: %w", err)
	}
	if h.Kind == "Status" && (h.APIVersion == "v1" || h.APIVersion == "") {
		status := &metav1.Status{}
		if err := utiljson.Unmarshal(data, status); err != nil {
			return nil, fmt.Errorf("decode a Status: %w", err)
		}
		return status, nil
	}
	m := h.Metadata
	delete(m.Annotations, LastApplied)
	if len(m.Annotations) == 0 {
		m.Annotations = nil
	}
	return &Object{
		TypeMeta: h.TypeMeta,
		ObjectMeta: metav1.ObjectMeta{
			Name: m.Name, GenerateName: m.GenerateName, Namespace: m.Namespace, UID: m.UID,
			ResourceVersion: m.ResourceVersion, Generation: m.Generation,
			CreationTimestamp: m.CreationTimestamp, DeletionTimestamp: m.DeletionTimestamp,
			Labels: m.Labels, Annotations: m.Annotations, OwnerReferences: m.OwnerReferences, Finalizers: m.Finalizers,
		},
		Raw: bytes.Clone(data),
	}, nil
}

// List is a list response: its items as Objects.
type List struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata"`
	Items           []Object `json:"items"`
}

// DeepCopyObject implements runtime.Object.
func (l *List) DeepCopyObject() runtime.Object {
	out := &List{TypeMeta: l.TypeMeta}
	l.DeepCopyInto(&out.ListMeta)
	out.Items = make([]Object, len(l.Items))
	for i := range l.Items {
		out.Items[i] = *l.Items[i].DeepCopyObject().(*Object)
	}
	return out
}

// decodeList reads a list response.
func decodeList(data []byte) (*List, error) {
	var raw struct {
		metav1.TypeMeta `json:",inline"`
		Metadata        metav1.ListMeta   `json:"metadata"`
		Items           []json.RawMessage `json:"items"`
	}
	if err := utiljson.Unmarshal(data, &raw); err != nil {
		return nil, fmt.Errorf("decode a list: %w", err)
	}
	list := &List{TypeMeta: raw.TypeMeta, ListMeta: raw.Metadata, Items: make([]Object, 0, len(raw.Items))}
	for _, item := range raw.Items {
		obj, err := decodeObject(item)
		if err != nil {
			return nil, err
		}
		o, ok := obj.(*Object)
		if !ok {
			return nil, fmt.Errorf("a list item is a %T", obj)
		}
		list.Items = append(list.Items, *o)
	}
	return list, nil
}

// codec decodes what list and watch requests return: into a typed target when given one (a
// watch event's frame, a Status), else an object as decodeObject does. It encodes nothing: the
// requests it serves have no body.
type codec struct{}

func (codec) Decode(data []byte, _ *schema.GroupVersionKind, into runtime.Object) (runtime.Object, *schema.GroupVersionKind, error) {
	if into != nil {
		if err := utiljson.Unmarshal(data, into); err != nil {
			return nil, nil, fmt.Errorf("decode %T: %w", into, err)
		}
		return into, nil, nil
	}
	obj, err := decodeObject(data)
	if err != nil {
		return nil, nil, err
	}
	gvk := obj.GetObjectKind().GroupVersionKind()
	return obj, &gvk, nil
}

var errNoEncoding = errors.New("compact: the list and watch client sends no objects")

func (codec) Encode(runtime.Object, io.Writer) error { return errNoEncoding }

func (codec) Identifier() runtime.Identifier { return "compact-json" }

// negotiator offers codec for JSON, the only media type the client asks for.
type negotiator struct{}

func (negotiator) SupportedMediaTypes() []runtime.SerializerInfo {
	return []runtime.SerializerInfo{{
		MediaType: "application/json", MediaTypeType: "application", MediaTypeSubType: "json",
		EncodesAsText: true, Serializer: codec{},
		StreamSerializer: &runtime.StreamSerializerInfo{EncodesAsText: true, Serializer: codec{}, Framer: kjson.Framer},
	}}
}

func (negotiator) EncoderForVersion(e runtime.Encoder, _ runtime.GroupVersioner) runtime.Encoder {
	return e
}

func (negotiator) DecoderToVersion(d runtime.Decoder, _ runtime.GroupVersioner) runtime.Decoder {
	return d
}
