package compact

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utiljson "k8s.io/apimachinery/pkg/util/json"
)

// FuzzDecodeObject checks the metadata scanner against the standard decoder: whatever the bytes,
// decodeObject does not panic, and where the standard decoder reads an object (with no key twice
// in one object, which the API server never sends and the two resolve differently), decodeObject
// reads it too, with the same type and the same metadata the caches use, and keeps its bytes.
func FuzzDecodeObject(f *testing.F) {
	for _, o := range objects {
		f.Add([]byte(o.json))
	}
	for _, bad := range []string{``, `[]`, `"x"`, `{"metadata":{"name":"x"`, `{"metadata":{"labels":{"a":1}}}`, `{"metadata":{"generation":"x"}}`} {
		f.Add([]byte(bad))
	}
	f.Add([]byte(`{"kind":"Status","apiVersion":"v1","status":"Failure","code":410}`))
	f.Add([]byte(`{"kind":"Status","status":0}`)) // not a Status: decodeObject refuses it, as the standard decoder does
	f.Fuzz(func(t *testing.T, data []byte) {
		got, err := decodeObject(data)
		want, ok := standardObject(data)
		if !ok {
			return
		}
		if err != nil {
			t.Fatalf("%q: the standard decoder reads it, decodeObject: %v", data, err)
		}
		o, isObject := got.(*Object)
		if !isObject {
			if _, isStatus := got.(*metav1.Status); !isStatus || want.Kind != "Status" {
				t.Fatalf("%q: decoded as %T", data, got)
			}
			return
		}
		if o.typeMeta() != want.TypeMeta {
			t.Errorf("%q: type %+v, the standard decoder's %+v", data, o.typeMeta(), want.TypeMeta)
		}
		if meta := cachedMeta(o.fullMeta()); !reflect.DeepEqual(meta, want.Metadata) {
			t.Errorf("%q: metadata\n%+v\nthe standard decoder's\n%+v", data, meta, want.Metadata)
		}
		if err := decodesAsTheStandardDecoder(data, o); err != nil {
			t.Errorf("%q: %v", data, err)
		}
	})
}

// standardObject is what the standard decoder reads of an object's type and metadata, as the
// caches keep it (cachedMeta); false when it reads no object, or one with a key twice.
func standardObject(data []byte) (obj struct {
	metav1.TypeMeta `json:",inline"`
	Metadata        metav1.ObjectMeta `json:"metadata"`
}, ok bool) {
	if !bytes.HasPrefix(bytes.TrimLeft(data, " \t\r\n"), []byte("{")) || repeatsAKey(data) {
		return obj, false
	}
	if err := utiljson.Unmarshal(data, &obj); err != nil {
		return obj, false
	}
	if obj.Kind == "Status" && (obj.APIVersion == "v1" || obj.APIVersion == "") {
		// a Status is read as one (client-go's errors from a watch or a request): not a Status
		// when its fields are not a Status's, such as a number for its status
		if err := utiljson.Unmarshal(data, &metav1.Status{}); err != nil {
			return obj, false
		}
	}
	obj.Metadata = cachedMeta(obj.Metadata)
	return obj, true
}

// cachedMeta is the metadata a cached object keeps (decodeMetadata): no managed fields, no
// kubectl's last-applied copy, nil for empty labels and annotations.
func cachedMeta(m metav1.ObjectMeta) metav1.ObjectMeta {
	out := metav1.ObjectMeta{
		Name: m.Name, GenerateName: m.GenerateName, Namespace: m.Namespace, UID: m.UID,
		ResourceVersion: m.ResourceVersion, Generation: m.Generation,
		CreationTimestamp: m.CreationTimestamp, DeletionTimestamp: m.DeletionTimestamp,
		DeletionGracePeriodSeconds: m.DeletionGracePeriodSeconds,
		OwnerReferences:            m.OwnerReferences, Finalizers: m.Finalizers,
	}
	if len(m.Labels) > 0 {
		out.Labels = m.Labels
	}
	if a := withoutLastApplied(m.Annotations); len(a) > 0 {
		out.Annotations = a
	}
	return out
}

// repeatsAKey reports whether some object of the JSON data has a key twice, or data is no JSON.
func repeatsAKey(data []byte) bool {
	type open struct {
		keys      map[string]bool // nil: an array
		expectKey bool
	}
	var stack []open
	valueDone := func() { // in an object, a key comes next
		if n := len(stack); n > 0 && stack[n-1].keys != nil {
			stack[n-1].expectKey = true
		}
	}
	d := json.NewDecoder(bytes.NewReader(data))
	for {
		tok, err := d.Token()
		if errors.Is(err, io.EOF) {
			return len(stack) > 0 // ended in an object or array
		}
		if err != nil {
			return true
		}
		top := len(stack) - 1
		switch tok {
		case json.Delim('{'):
			stack = append(stack, open{keys: map[string]bool{}, expectKey: true})
			continue
		case json.Delim('['):
			stack = append(stack, open{})
			continue
		case json.Delim('}'), json.Delim(']'):
			stack = stack[:top]
			valueDone()
			continue
		}
		if key, ok := tok.(string); ok && top >= 0 && stack[top].expectKey {
			if stack[top].keys[key] {
				return true
			}
			stack[top].keys[key], stack[top].expectKey = true, false
			continue
		}
		valueDone()
	}
}

// FuzzFramer checks the watch stream's framer: whatever the bytes and however the stream
// delivers them, it returns the same frames and ends the same way; each frame is the next object
// of the stream, after whitespace only; and a stream of JSON objects, as encoding/json reads
// them, is returned object by object, to its end.
func FuzzFramer(f *testing.F) {
	var stream strings.Builder
	for i, o := range objects {
		stream.WriteString(`{"type":"ADDED","object":` + o.json + "}")
		stream.WriteString([]string{"\n", "", " \r\n\t"}[i%3])
	}
	f.Add([]byte(stream.String()), uint8(7))
	for _, o := range objects {
		f.Add([]byte(o.json+"\n"), uint8(1))
	}
	f.Add([]byte(`{"type":"ADDED","object":{"kind":"Pod","metadata":{"name":"a}"`), uint8(5))
	f.Add([]byte(` ["not", "an", "object"]`), uint8(5))
	f.Add([]byte(`{"a":"\\"}{"b":["}"]} {}`), uint8(2))
	f.Fuzz(func(t *testing.T, data []byte, chunk uint8) {
		frames, err := readFrames(data, len(data)+1, 1<<16)
		for _, read := range [][2]int{{1, 3}, {int(chunk%64) + 1, 64}} {
			other, otherErr := readFrames(data, read[0], read[1])
			if !reflect.DeepEqual(other, frames) || errClass(otherErr) != errClass(err) {
				t.Fatalf("%q: reads of %d bytes into %d: %q, %v; at once: %q, %v", data, read[0], read[1], other, otherErr, frames, err)
			}
		}
		i := 0
		for n, frame := range frames {
			i = skipSpace(data, i)
			// it tracks nesting, not which bracket closes what: "{]" is a frame
			if last := frame[len(frame)-1]; !strings.HasPrefix(string(data[i:]), frame) || frame[0] != '{' || last != '}' && last != ']' {
				t.Fatalf("%q: frame %d %q is not the next object of the stream", data, n, frame)
			}
			i += len(frame)
		}
		if errors.Is(err, io.EOF) && skipSpace(data, i) != len(data) {
			t.Fatalf("%q: EOF with %q left", data, data[i:])
		}
		if want, ok := jsonObjects(data); ok && (!reflect.DeepEqual(frames, want) || !errors.Is(err, io.EOF)) {
			t.Fatalf("%q: frames %q (%v), encoding/json's objects %q", data, frames, err, want)
		}
	})
}

// readFrames reads every frame of a stream delivered chunk bytes at a time, with a buffer of buf
// bytes (a frame larger than that comes in parts, as to the streaming decoder), until an error.
func readFrames(data []byte, chunk, buf int) ([]string, error) {
	r := framer{}.NewFrameReader(&chunks{data: data, n: chunk})
	var frames []string
	var frame []byte
	p := make([]byte, buf)
	for range len(data) + 2 {
		n, err := r.Read(p)
		frame = append(frame, p[:n]...)
		switch {
		case errors.Is(err, io.ErrShortBuffer):
			continue
		case err != nil:
			return frames, err
		case n == 0:
			return frames, errors.New("an empty frame")
		}
		frames = append(frames, string(frame))
		frame = nil
	}
	return frames, errors.New("more reads than bytes")
}

// errClass names what ended a stream.
func errClass(err error) string {
	for _, e := range []error{io.EOF, io.ErrUnexpectedEOF, errNotAnObject} {
		if errors.Is(err, e) {
			return e.Error()
		}
	}
	return fmt.Sprint(err)
}

// jsonObjects returns the JSON objects of a stream, as encoding/json reads them; false when the
// stream holds anything else.
func jsonObjects(data []byte) ([]string, bool) {
	d := json.NewDecoder(bytes.NewReader(data))
	var out []string
	for {
		var raw json.RawMessage
		err := d.Decode(&raw)
		if errors.Is(err, io.EOF) {
			return out, true
		}
		if err != nil || raw[0] != '{' {
			return nil, false
		}
		out = append(out, string(raw))
	}
}

func TestRepeatsAKey(t *testing.T) {
	for data, want := range map[string]bool{
		`{"a":1,"b":{"a":2},"c":[{"a":1},{"a":2}]}`: false,
		`{"a":1,"a":2}`:           true,
		`{"m":{"x":"a","x":"b"}}`: true,
		`{"l":[{"k":1,"k":2}]}`:   true,
		`{"a":"a","b":["a","a"]}`: false,
		`{"a":`:                   true,
	} {
		if got := repeatsAKey([]byte(data)); got != want {
			t.Errorf("repeatsAKey(%s) = %v, want %v", data, got, want)
		}
	}
}
