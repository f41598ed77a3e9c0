package compact

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer/protobuf"
	"k8s.io/apimachinery/pkg/types"
	utiljson "k8s.io/apimachinery/pkg/util/json"

	"metacel.dev/metacel/runtime/apply"
)

// decodeObject reads an object: a Status (the API server's error, in a watch event or a response)
// as a *metav1.Status, anything else as an *Object with its type and metadata decoded
// (decodeMetadata), holding a copy of the rest of data, which is skipped unread, but its kind and
// apiVersion, which the Object holds.
func decodeObject(data []byte) (runtime.Object, error) {
	o := &Object{}
	var typ metav1.TypeMeta
	var metadata []byte
	var body [][2][]byte // the other fields' keys and values, in order
	size := 2
	err := eachRawField(data, func(rawKey []byte, key string, value []byte) (err error) {
		switch key {
		case "kind":
			if typ.Kind, err = stringValue(value); err == nil && typ.Kind != "" {
				return nil // held once for the kind (meta.go); a decode puts it back (jsonToMap)
			}
		case "apiVersion":
			if typ.APIVersion, err = stringValue(value); err == nil && typ.APIVersion != "" {
				return nil
			}
		case "metadata":
			metadata = value
			return nil
		}
		body = append(body, [2][]byte{rawKey, value})
		size += len(rawKey) + len(value) + 2
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("decode an object's metadata: %w", err)
	}
	if typ.Kind == "Status" && (typ.APIVersion == "v1" || typ.APIVersion == "") {
		status := &metav1.Status{}
		if err := utiljson.Unmarshal(data, status); err != nil {
			return nil, fmt.Errorf("decode a Status: %w", err)
		}
		return status, nil
	}
	o.setTypeMeta(typ)
	o.metaSize = int32(len(metadata))
	if metadata != nil && !isNull(metadata) {
		if err := decodeMetadata(metadata, o); err != nil {
			return nil, fmt.Errorf("decode the metadata of %s %q: %w", typ.Kind, o.name, err)
		}
	}
	o.Raw = jsonObject(make([]byte, 0, size), body)
	return o, nil
}

// jsonObject appends to out the JSON object of fields, each a raw key and its value.
func jsonObject(out []byte, fields [][2][]byte) []byte {
	out = append(out, '{')
	for i, f := range fields {
		if i > 0 {
			out = append(out, ',')
		}
		out = append(append(append(out, f[0]...), ':'), f[1]...)
	}
	return append(out, '}')
}

// decodeMetadata reads into o's meta the metadata of an object, interned, but its managed fields,
// which it reads into o.managed (managed.go), and kubectl's last-applied copy, which it drops.
func decodeMetadata(data []byte, o *Object) error {
	var m metav1.ObjectMeta
	var managed []byte
	if err := decodeObjectMeta(data, &m, &managed); err != nil {
		return err
	}
	intern(&m)
	o.setMeta(&m)
	if managed == nil || isNull(managed) {
		return nil
	}
	entries, err := decodeManagedFields(managed)
	if err != nil {
		return fmt.Errorf("metadata.managedFields: %w", err)
	}
	o.managed = compactManaged(entries, o.ownerReferences)
	return nil
}

// decodeObjectMeta reads metadata into m, but kubectl's last-applied copy and the managed fields,
// whose JSON it sets managed to when managed is not nil.
func decodeObjectMeta(data []byte, m *metav1.ObjectMeta, managed *[]byte) error {
	return eachField(data, func(key string, value []byte) (err error) {
		switch key {
		case "name":
			m.Name, err = stringValue(value)
		case "generateName":
			m.GenerateName, err = stringValue(value)
		case "namespace":
			m.Namespace, err = stringValue(value)
		case "uid":
			var uid string
			uid, err = stringValue(value)
			m.UID = types.UID(uid)
		case "resourceVersion":
			m.ResourceVersion, err = stringValue(value)
		case "generation":
			if !isNull(value) {
				m.Generation, err = strconv.ParseInt(string(value), 10, 64)
			}
		case "creationTimestamp":
			err = m.CreationTimestamp.UnmarshalJSON(value)
		case "deletionTimestamp":
			if !isNull(value) {
				m.DeletionTimestamp = &metav1.Time{}
				err = m.DeletionTimestamp.UnmarshalJSON(value)
			}
		case "deletionGracePeriodSeconds":
			err = utiljson.Unmarshal(value, &m.DeletionGracePeriodSeconds)
		case "labels":
			m.Labels, err = stringMap(value)
		case "annotations":
			m.Annotations, err = stringMap(value)
			m.Annotations = withoutLastApplied(m.Annotations)
		case "ownerReferences":
			err = utiljson.Unmarshal(value, &m.OwnerReferences)
		case "finalizers":
			err = utiljson.Unmarshal(value, &m.Finalizers)
		case "managedFields":
			if managed != nil {
				*managed = value // read when the owners are: a custom resource's keys come in order
			}
		}
		if err != nil {
			return fmt.Errorf("metadata.%s: %w", key, err)
		}
		return nil
	})
}

// decodeManagedFields reads managed-fields entries, the fields of metacel's only.
func decodeManagedFields(data []byte) ([]metav1.ManagedFieldsEntry, error) {
	var out []metav1.ManagedFieldsEntry
	err := eachElement(data, func(item []byte) error {
		var e metav1.ManagedFieldsEntry
		var fields []byte
		err := eachField(item, func(key string, value []byte) (err error) {
			switch key {
			case "manager":
				e.Manager, err = stringValue(value)
			case "operation":
				var op string
				op, err = stringValue(value)
				e.Operation = metav1.ManagedFieldsOperationType(op)
			case "apiVersion":
				e.APIVersion, err = stringValue(value)
			case "fieldsType":
				e.FieldsType, err = stringValue(value)
			case "subresource":
				e.Subresource, err = stringValue(value)
			case "time":
				if !isNull(value) {
					e.Time = &metav1.Time{}
					err = e.Time.UnmarshalJSON(value)
				}
			case "fieldsV1":
				if !isNull(value) {
					fields = value
				}
			}
			return err
		})
		if fields != nil && e.Manager == apply.FieldManager { // only metacel's are kept (managed.go)
			e.FieldsV1 = metav1.NewFieldsV1(string(fields))
		}
		out = append(out, e)
		return err
	})
	return out, err
}

// withoutLastApplied drops kubectl's last-applied copy from annotations, which a cached
// object's metadata never keeps; nil when none are left.
func withoutLastApplied(annotations map[string]string) map[string]string {
	delete(annotations, LastApplied)
	if len(annotations) == 0 {
		return nil
	}
	return annotations
}

// stringValue reads a JSON string; null is "".
func stringValue(value []byte) (string, error) {
	if isNull(value) {
		return "", nil
	}
	return unquote(value)
}

// stringMap reads a JSON object of strings (labels, annotations); null is nil.
func stringMap(value []byte) (map[string]string, error) {
	if isNull(value) {
		return nil, nil
	}
	out := map[string]string{}
	err := eachField(value, func(key string, v []byte) (err error) {
		out[key], err = stringValue(v)
		return err
	})
	return out, err
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
		o.setTypeMeta(itemType(o.typeMeta(), raw.TypeMeta))
		list.Items = append(list.Items, *o)
	}
	return list, nil
}

// itemType is the kind and apiVersion of a list's item: its own, or, where it has none (the API
// server leaves them out of the items of a built-in kind's JSON list), the list's, as
// apimachinery's unstructured list fills them in.
func itemType(item, list metav1.TypeMeta) metav1.TypeMeta {
	if item.APIVersion == "" {
		item.APIVersion = list.APIVersion
	}
	if item.Kind == "" {
		item.Kind = strings.TrimSuffix(list.Kind, "List")
	}
	return item
}

// codec decodes what list and watch requests return: into a typed target when given one (a
// watch event's frame, a Status), else an object as decodeObject does. It encodes nothing: the
// requests it serves have no body.
type codec struct{}

func (codec) Decode(data []byte, _ *schema.GroupVersionKind, into runtime.Object) (runtime.Object, *schema.GroupVersionKind, error) {
	if event, ok := into.(*metav1.WatchEvent); ok {
		if err := decodeWatchEvent(data, event); err != nil {
			return nil, nil, err
		}
		return event, nil, nil
	}
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

// decodeWatchEvent reads a watch event's frame: its type, and its object's JSON, which the watch
// decoder then decodes (decodeObject, which copies it) before it reads the next frame.
func decodeWatchEvent(data []byte, event *metav1.WatchEvent) error {
	*event = metav1.WatchEvent{}
	err := eachField(data, func(key string, value []byte) (err error) {
		switch key {
		case "type":
			event.Type, err = stringValue(value)
		case "object":
			event.Object.Raw = value
		}
		return err
	})
	if err != nil {
		return fmt.Errorf("decode a watch event: %w", err)
	}
	return nil
}

var errNoEncoding = errors.New("compact: the list and watch client sends no objects")

func (codec) Encode(runtime.Object, io.Writer) error { return errNoEncoding }

func (codec) Identifier() runtime.Identifier { return "compact-json" }

// negotiator offers codec for JSON and protobufCodec for protobuf, the media types the client
// asks for; the API server's answer says which a response is.
type negotiator struct {
	// maxKept: protobuf watch events larger than it are reduced (omittingFramer); 0: none
	maxKept int
}

func (n negotiator) SupportedMediaTypes() []runtime.SerializerInfo {
	var protobufFramer runtime.Framer = protobuf.LengthDelimitedFramer
	if n.maxKept > 0 {
		protobufFramer = omittingFramer{max: n.maxKept}
	}
	return []runtime.SerializerInfo{{
		MediaType: "application/json", MediaTypeType: "application", MediaTypeSubType: "json",
		EncodesAsText: true, Serializer: codec{},
		StreamSerializer: &runtime.StreamSerializerInfo{EncodesAsText: true, Serializer: codec{}, Framer: framer{}},
	}, {
		MediaType: protobufMediaType, MediaTypeType: "application", MediaTypeSubType: "vnd.kubernetes.protobuf",
		Serializer:       protobufCodec{},
		StreamSerializer: &runtime.StreamSerializerInfo{Serializer: protobufEvents{}, Framer: protobufFramer},
	}}
}

func (negotiator) EncoderForVersion(e runtime.Encoder, _ runtime.GroupVersioner) runtime.Encoder {
	return e
}

func (negotiator) DecoderToVersion(d runtime.Decoder, _ runtime.GroupVersioner) runtime.Decoder {
	return d
}
