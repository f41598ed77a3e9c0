package compact

import (
	"bytes"
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"sync"

	"google.golang.org/protobuf/encoding/protowire"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/scheme"

	"metacel.dev/metacel/runtime/projection"
)

// Project returns the object with only what keep keeps of its body (package projection): its
// identifying fields whole, the others as keep names them. JSON stays JSON and a protobuf message
// stays a message of its kind, whose fields are found by their JSON names in client-go's type.
// An object whose body was not kept, or a nil keep, is returned as it is.
func (o *Object) Project(keep *projection.Fields) (*Object, error) {
	if keep.IsWhole() || o.Raw == nil || o.fetches() || o.bodyOmitted() {
		return o, nil
	}
	var raw []byte
	var err error
	if o.Protobuf {
		raw, err = projectProtobuf(o.GroupVersionKind(), o.Raw, keep)
	} else {
		raw, err = projectJSONObject(make([]byte, 0, len(o.Raw)), o.Raw, keep, true)
	}
	if err != nil {
		return nil, fmt.Errorf("keep the fields read of %s %s/%s: %w", o.kind(), o.namespace, o.name, err)
	}
	out := *o
	out.Raw = bytes.Clone(raw) // the cache keeps it: its exact size, not the scratch buffer's
	return &out, nil
}

// projectJSONObject appends to out the JSON object data with only the fields keep keeps (and,
// at the top, the identifying ones).
func projectJSONObject(out, data []byte, keep *projection.Fields, top bool) ([]byte, error) {
	out = append(out, '{')
	first := true
	err := eachRawField(data, func(rawKey []byte, key string, value []byte) error {
		sub, ok := keep.Field(key)
		if top && projection.Identity(key) {
			sub, ok = nil, true
		}
		if !ok {
			return nil
		}
		if !first {
			out = append(out, ',')
		}
		first = false
		out = append(append(out, rawKey...), ':')
		var err error
		out, err = projectJSONValue(out, value, sub)
		return err
	})
	return append(out, '}'), err
}

// projectJSONValue appends value with only what keep keeps: of an object its fields named, of an
// array each item so; anything else whole.
func projectJSONValue(out, value []byte, keep *projection.Fields) ([]byte, error) {
	if keep.IsWhole() || len(value) == 0 {
		return append(out, value...), nil
	}
	switch value[0] {
	case '{':
		return projectJSONObject(out, value, keep, false)
	case '[':
		out = append(out, '[')
		first := true
		err := eachElement(value, func(item []byte) error {
			if !first {
				out = append(out, ',')
			}
			first = false
			var err error
			out, err = projectJSONValue(out, item, keep)
			return err
		})
		return append(out, ']'), err
	default:
		return append(out, value...), nil
	}
}

// projectProtobuf returns the message of a built-in kind (held without its metadata) with only
// what keep keeps.
func projectProtobuf(gvk schema.GroupVersionKind, message []byte, keep *projection.Fields) ([]byte, error) {
	typ, err := messageTypeOf(gvk)
	if err != nil {
		return nil, err
	}
	return projectMessage(make([]byte, 0, len(message)), message, typ, keep, true)
}

// projectMessage appends to out the fields of message that keep keeps, projecting those it keeps
// in part (each occurrence of a repeated one: a list's every item).
func projectMessage(out, message []byte, typ *messageType, keep *projection.Fields, top bool) ([]byte, error) {
	err := eachMessageField(message, func(num protowire.Number, wire protowire.Type, whole []byte, tag int) error {
		f, known := typ.fields[num]
		if !known {
			return nil // not in client-go's type: its decoding would drop it too
		}
		sub, ok := keep, true // an inline field's fields are its parent's (a Volume's source)
		if !f.inline {
			sub, ok = keep.Field(f.name)
		}
		if top && projection.Identity(f.name) {
			sub, ok = nil, true
		}
		switch {
		case !ok:
		case sub.IsWhole() || wire != protowire.BytesType || f.elem == nil:
			out = append(out, whole...)
		default:
			v, _ := protowire.ConsumeBytes(whole[tag:])
			projected, err := projectMessage(nil, v, f.elem, sub, false)
			if err != nil {
				return fmt.Errorf("%s: %w", f.name, err)
			}
			out = protowire.AppendTag(out, num, protowire.BytesType)
			out = protowire.AppendBytes(out, projected)
		}
		return nil
	})
	return out, err
}

// eachMessageField calls fn with the number, wire type and bytes (tag included, tag bytes long)
// of each field of a message, in order, until fn returns an error.
func eachMessageField(message []byte, fn func(num protowire.Number, wire protowire.Type, whole []byte, tag int) error) error {
	for len(message) > 0 {
		num, wire, n := protowire.ConsumeTag(message)
		if n < 0 {
			return protowire.ParseError(n)
		}
		m := protowire.ConsumeFieldValue(num, wire, message[n:])
		if m < 0 {
			return protowire.ParseError(m)
		}
		if err := fn(num, wire, message[:n+m], n); err != nil {
			return err
		}
		message = message[n+m:]
	}
	return nil
}

// messageType is the protobuf fields of a built-in type, by number: each field's JSON name and,
// for a message whose fields a projection may choose among, its own fields.
type messageType struct {
	fields map[protowire.Number]messageField
}

type messageField struct {
	name string
	// inline: the field's own fields are named as its parent's in JSON (`json:",inline"`)
	inline bool
	// elem is the type of a message field (of each item of a repeated one) that has fields of its
	// own to choose among; nil for a scalar, a map, or a message kept whole (a quantity, a time)
	elem *messageType
}

// messageTypes are the types read so far, by Go type (kinds share most of theirs), and
// kindMessageTypes those of each kind projected so far: the scheme finds a kind's Go type only
// by making an object of it (a Pod's struct, about a kilobyte zeroed), which an informer's
// projection of every event would otherwise pay.
var messageTypes, kindMessageTypes sync.Map // reflect.Type, schema.GroupVersionKind -> *messageType

// messageTypeOf returns the fields of the message of a built-in kind.
func messageTypeOf(gvk schema.GroupVersionKind) (*messageType, error) {
	if mt, ok := kindMessageTypes.Load(gvk); ok {
		return mt.(*messageType), nil
	}
	obj, err := scheme.Scheme.New(gvk)
	if err != nil {
		return nil, err
	}
	mt := messageTypeFor(reflect.TypeOf(obj).Elem())
	kindMessageTypes.Store(gvk, mt)
	return mt, nil
}

var messageTypesMu sync.Mutex

// messageTypeFor reads a struct type's protobuf tags (`protobuf:"bytes,2,opt,name=spec"`) and
// JSON names; nil for a type with none (one encoded by hand: a quantity, a time).
func messageTypeFor(t reflect.Type) *messageType {
	if mt, ok := messageTypes.Load(t); ok {
		return mt.(*messageType)
	}
	messageTypesMu.Lock()
	defer messageTypesMu.Unlock()
	return readMessageType(t, map[reflect.Type]*messageType{})
}

// readMessageType is messageTypeFor under the lock; reading are the types being read, for the
// types that hold themselves.
func readMessageType(t reflect.Type, reading map[reflect.Type]*messageType) *messageType {
	if mt, ok := messageTypes.Load(t); ok {
		return mt.(*messageType)
	}
	if mt, ok := reading[t]; ok {
		return mt
	}
	mt := &messageType{fields: map[protowire.Number]messageField{}}
	reading[t] = mt
	for i := range t.NumField() {
		sf := t.Field(i)
		num, ok := protobufNumber(sf.Tag.Get("protobuf"))
		name, opts, _ := strings.Cut(sf.Tag.Get("json"), ",")
		inline := name == "" && opts == "inline"
		if !ok || name == "-" || name == "" && !inline {
			continue
		}
		f := messageField{name: name, inline: inline}
		if et := elemStruct(sf.Type); et != nil {
			if sub := readMessageType(et, reading); sub != nil {
				f.elem = sub
			}
		}
		mt.fields[num] = f
	}
	if len(mt.fields) == 0 {
		mt = nil
	}
	if mt != nil {
		messageTypes.Store(t, mt)
	}
	return mt
}

// elemStruct returns the struct type a field's value (or each item of a list) is, nil for a map or
// a scalar.
func elemStruct(t reflect.Type) reflect.Type {
	for t.Kind() == reflect.Pointer || t.Kind() == reflect.Slice {
		if t.Kind() == reflect.Slice && t.Elem().Kind() == reflect.Uint8 {
			return nil // bytes
		}
		t = t.Elem()
	}
	if t.Kind() != reflect.Struct {
		return nil
	}
	return t
}

// protobufNumber reads the field number of a protobuf struct tag.
func protobufNumber(tag string) (protowire.Number, bool) {
	parts := strings.Split(tag, ",")
	if len(parts) < 2 {
		return 0, false
	}
	n, err := strconv.Atoi(parts[1])
	return protowire.Number(n), err == nil && n > 0
}
