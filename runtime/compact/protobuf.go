package compact

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"sync"

	"google.golang.org/protobuf/encoding/protowire"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer/protobuf"
	"k8s.io/apimachinery/pkg/version"
	"k8s.io/client-go/kubernetes/scheme"
)

// The built-in kinds (those of client-go's scheme) are listed and watched as protobuf, as
// Kubernetes' own components and typed clients are: kube-apiserver encodes a Pod as protobuf for
// a fraction of what its JSON costs it (a restart of metacel over 10,000 Pods cost the control
// plane 1.0-2.0 s of CPU with them as protobuf, against 1.3-2.4 s as JSON), and a cache keeps
// fewer bytes (a Pod's event: 1.1 against 2.5 KB, its metadata decoded in 2.0 against 8.1 µs;
// BenchmarkCacheEvent). A cached object then holds its kind's protobuf message, and the metadata
// decoded from it (ObjectMeta is field 1 of every built-in kind's message). A sync that reads it
// decodes the message into client-go's type, encodes that as JSON as the API server would have
// (encoding/json), and decodes the JSON as a cached JSON object: exact by construction, and 40-45
// µs for a Pod against 17 µs from JSON (BenchmarkDecodeCached), which only a sync whose inputs
// changed pays. Custom resources have no protobuf encoding, and a kind client-go does not know
// (an aggregated API's) could not be decoded: both stay JSON.

// A message decodes into client-go's type, which drops the fields it does not know: those a
// newer API server adds. So protobuf is used only with an API server whose minor version is at
// most that of the k8s.io/api module built into the binary (the version skew Kubernetes supports
// for its clients the other way round); with a newer one, or one whose version is not known,
// every kind stays JSON, which keeps every field.

// typesMinor is the Kubernetes minor version of the built-in types in this binary: k8s.io/api
// v0.36.x in go.mod (TestTypesMinorIsGoModsAPIVersion fails when go.mod moves on without it).
const typesMinor = 36

// ProtobufServer reports whether the built-in kinds may come as protobuf from an API server of
// that version (nil: not known).
func ProtobufServer(server *version.Info) bool {
	return protobufServer(server, typesMinor)
}

func protobufServer(server *version.Info, built int) bool {
	if server == nil || server.Major != "1" {
		return false
	}
	digits := strings.TrimRightFunc(server.Minor, func(r rune) bool { return r < '0' || r > '9' }) // "36+" on some providers
	minor, err := strconv.Atoi(digits)
	return err == nil && minor <= built
}

// protobufMediaType is the API server's protobuf encoding; protobufAccept asks for it, or JSON
// where the server cannot encode a kind so.
const (
	protobufMediaType = "application/vnd.kubernetes.protobuf"
	protobufAccept    = protobufMediaType + ", application/json"
)

// builtinResources are the resources of client-go's scheme, by the names the API server
// serves them under: the plural of each kind, as the API server names every built-in resource.
// Computed on first use: it makes an object of every kind of the scheme, which a binary that
// never lists (the offline CLI) need not pay for at start.
var builtinResources = sync.OnceValue(func() map[schema.GroupVersionResource]bool {
	out := map[schema.GroupVersionResource]bool{}
	for gvk := range scheme.Scheme.AllKnownTypes() {
		if strings.HasSuffix(gvk.Kind, "List") || gvk.Version == runtime.APIVersionInternal {
			continue
		}
		obj, err := scheme.Scheme.New(gvk)
		if err != nil {
			continue
		}
		if _, ok := obj.(metav1.Object); !ok {
			continue // options, events of watches, subresources' kinds
		}
		if _, ok := obj.(unmarshaler); !ok {
			continue
		}
		plural, _ := meta.UnsafeGuessKindToResource(gvk)
		out[plural] = true
	}
	return out
})

// ProtobufFor reports whether the objects of a resource are listed and watched as protobuf.
func ProtobufFor(gvr schema.GroupVersionResource) bool { return builtinResources()[gvr] }

type unmarshaler interface{ Unmarshal([]byte) error }

// protoEnvelope is what starts every object the API server encodes as protobuf, before the
// runtime.Unknown that carries its kind and message.
var protoEnvelope = []byte{0x6b, 0x38, 0x73, 0x00} // "k8s\x00"

// decodeProtobufObject reads an object encoded as protobuf: a Status as a *metav1.Status,
// anything else as an *Object holding a copy of its message, with its type and the metadata the
// caches read decoded.
func decodeProtobufObject(data []byte) (runtime.Object, error) {
	unknown, err := unwrap(data)
	if err != nil {
		return nil, err
	}
	if unknown.Kind == "Status" && (unknown.APIVersion == "v1" || unknown.APIVersion == "") {
		status := &metav1.Status{}
		if err := status.Unmarshal(unknown.Raw); err != nil {
			return nil, fmt.Errorf("decode a Status: %w", err)
		}
		return status, nil
	}
	return protobufItem(unknown.TypeMeta, unknown.Raw) // Unmarshal copied it
}

// unwrap returns the runtime.Unknown an object encoded as protobuf travels in.
func unwrap(data []byte) (*runtime.Unknown, error) {
	if !bytes.HasPrefix(data, protoEnvelope) {
		return nil, errors.New("decode a protobuf object: it does not start with the API server's envelope")
	}
	unknown := &runtime.Unknown{}
	if err := unknown.Unmarshal(data[len(protoEnvelope):]); err != nil {
		return nil, fmt.Errorf("decode a protobuf object: %w", err)
	}
	return unknown, nil
}

// protobufItem is the Object of a kind's message, with its metadata decoded as decodeMetadata
// reads JSON's and the rest of the message kept.
func protobufItem(typ runtime.TypeMeta, message []byte) (*Object, error) {
	o := &Object{Protobuf: true}
	o.setTypeMeta(metav1.TypeMeta{APIVersion: typ.APIVersion, Kind: typ.Kind})
	metadata, err := field(message, messageMetadata)
	if err != nil {
		return nil, fmt.Errorf("decode the metadata of the %s: %w", typ.Kind, err)
	}
	var m metav1.ObjectMeta
	if err := m.Unmarshal(metadata); err != nil {
		return nil, fmt.Errorf("decode the metadata of the %s: %w", typ.Kind, err)
	}
	o.metaSize = int32(len(metadata))
	o.managed = compactManaged(m.ManagedFields, m.OwnerReferences)
	m.Annotations = withoutLastApplied(m.Annotations)
	intern(&m)
	o.setMeta(&m)
	if omittedSize(message) > 0 { // its body was dropped from the watch stream (omitframe.go)
		o.uncommonFields().bodyOmitted = true
		return o, nil
	}
	if o.Raw, err = withoutField(message, messageMetadata); err != nil {
		return nil, fmt.Errorf("decode the %s: %w", typ.Kind, err)
	}
	return o, nil
}

// messageMetadata is the number of every kind's metadata field.
const messageMetadata = 1

// withoutField returns a copy of message without the field of that number, of its exact size.
func withoutField(message []byte, number protowire.Number) ([]byte, error) {
	size := 0
	err := eachMessageField(message, func(num protowire.Number, _ protowire.Type, whole []byte, _ int) error {
		if num != number {
			size += len(whole)
		}
		return nil
	})
	out := make([]byte, 0, size)
	_ = eachMessageField(message, func(num protowire.Number, _ protowire.Type, whole []byte, _ int) error {
		if num != number {
			out = append(out, whole...)
		}
		return nil
	})
	return out, err
}

// field returns the bytes of the last occurrence of a length-delimited field of a message (as
// protobuf merges a repeated message field), nil when it has none.
func field(message []byte, number protowire.Number) ([]byte, error) {
	var out []byte
	err := eachBytesField(message, func(num protowire.Number, v []byte) error {
		if num == number {
			out = v
		}
		return nil
	})
	return out, err
}

// eachBytesField calls f with the number and bytes of each length-delimited field of a message,
// in order, skipping the fields of other wire types.
func eachBytesField(message []byte, f func(protowire.Number, []byte) error) error {
	return eachMessageField(message, func(num protowire.Number, wire protowire.Type, whole []byte, tag int) error {
		if wire != protowire.BytesType {
			return nil
		}
		v, _ := protowire.ConsumeBytes(whole[tag:])
		return f(num, v)
	})
}

// decodeProtobufList reads a list response encoded as protobuf: its metadata (field 1 of every
// list's message) and its items (field 2), each as protobufItem reads it.
func decodeProtobufList(data []byte) (*List, error) {
	unknown, err := unwrap(data)
	if err != nil {
		return nil, err
	}
	list := &List{TypeMeta: metav1.TypeMeta{APIVersion: unknown.APIVersion, Kind: unknown.Kind}}
	item := runtime.TypeMeta{APIVersion: unknown.APIVersion, Kind: strings.TrimSuffix(unknown.Kind, "List")}
	err = eachBytesField(unknown.Raw, func(num protowire.Number, v []byte) error {
		switch num {
		case 1:
			if err := list.ListMeta.Unmarshal(v); err != nil {
				return fmt.Errorf("metadata: %w", err)
			}
		case 2:
			o, err := protobufItem(item, v) // which copies what it keeps
			if err != nil {
				return err
			}
			list.Items = append(list.Items, *o)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("decode a list: %w", err)
	}
	return list, nil
}

// protobufToJSONMap turns a cached object's message into the map its JSON decodes to: decoded
// into client-go's type, encoded as the API server encodes it as JSON (encoding/json), and
// decoded as a cached JSON object is; faster than apimachinery's reflective converter to maps
// (40-45 against 55-60 µs for a Pod).
func (o *Object) protobufToJSONMap() (map[string]any, error) {
	gvk := o.GroupVersionKind()
	typed, err := scheme.Scheme.New(gvk)
	if err != nil {
		return nil, err
	}
	u, ok := typed.(unmarshaler)
	if !ok {
		return nil, fmt.Errorf("%s has no protobuf encoding", gvk)
	}
	if err := u.Unmarshal(o.Raw); err != nil {
		return nil, err
	}
	withObjectMeta(typed, o.fullMeta())
	data, err := json.Marshal(typed) // what the API server's JSON would have been
	if err != nil {
		return nil, err
	}
	m, err := unmarshalObject(data)
	if err != nil {
		return nil, err
	}
	t := o.typeMeta()
	m["apiVersion"], m["kind"] = t.APIVersion, t.Kind
	return m, nil
}

// withObjectMeta sets the metadata of a decoded object, whose message the cache keeps without it,
// to the cached metadata. The maps and slices are shared with the cache's, and only read: the
// object is encoded as JSON, then dropped.
func withObjectMeta(typed runtime.Object, meta metav1.ObjectMeta) {
	if accessor, ok := typed.(metav1.ObjectMetaAccessor); ok {
		if m, ok := accessor.GetObjectMeta().(*metav1.ObjectMeta); ok {
			*m = meta
		}
	}
}

// protobufCodec decodes what list and watch requests return as protobuf, as codec does JSON.
type protobufCodec struct{}

var typedProtobuf = protobuf.NewSerializer(scheme.Scheme, scheme.Scheme)

func (protobufCodec) Decode(data []byte, gvk *schema.GroupVersionKind, into runtime.Object) (runtime.Object, *schema.GroupVersionKind, error) {
	if into != nil {
		return typedProtobuf.Decode(data, gvk, into)
	}
	obj, err := decodeProtobufObject(data)
	if err != nil {
		return nil, nil, err
	}
	out := obj.GetObjectKind().GroupVersionKind()
	return obj, &out, nil
}

func (protobufCodec) Encode(runtime.Object, io.Writer) error { return errNoEncoding }

func (protobufCodec) Identifier() runtime.Identifier { return "compact-protobuf" }

// protobufEvents decodes a protobuf watch stream's frames: each a metav1.WatchEvent message,
// whose object protobufCodec then decodes.
type protobufEvents struct{}

func (protobufEvents) Decode(data []byte, _ *schema.GroupVersionKind, into runtime.Object) (runtime.Object, *schema.GroupVersionKind, error) {
	event, ok := into.(*metav1.WatchEvent)
	if !ok {
		return nil, nil, fmt.Errorf("a protobuf watch stream decodes into watch events, not %T", into)
	}
	*event = metav1.WatchEvent{}
	if err := event.Unmarshal(data); err != nil {
		return nil, nil, fmt.Errorf("decode a watch event: %w", err)
	}
	return event, nil, nil
}

func (protobufEvents) Encode(runtime.Object, io.Writer) error { return errNoEncoding }

func (protobufEvents) Identifier() runtime.Identifier { return "compact-protobuf-events" }
