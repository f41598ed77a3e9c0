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
	"k8s.io/apimachinery/pkg/runtime/serializer/streaming"
	utiljson "k8s.io/apimachinery/pkg/util/json"
)

// objects are what the API server sends, with what makes a scanner slip: braces, brackets,
// quotes and backslashes inside strings, escapes in keys and values, nulls, numbers at the end of
// an object, whitespace between tokens.
var objects = []struct{ name, json string }{
	{"a ConfigMap with last-applied and two managers", configMap},
	{"a Pod with metacel's managed fields and a deletion", `{"kind":"Pod","apiVersion":"v1","metadata":{"name":"app-1-pod","namespace":"bench",` +
		`"uid":"9f0c","resourceVersion":"1234","generation":3,"creationTimestamp":"2026-11-23T20:25:55Z",` +
		`"deletionTimestamp":"2026-11-23T21:00:00Z","finalizers":["metacel.dev/cleanup"],` +
		`"labels":{"app":"app-1","metacel.dev/parent-uid":"u-1"},"annotations":{"metacel.dev/desired-hash":"abc"},` +
		`"ownerReferences":[{"apiVersion":"demo.rtfm.co.ua/v1","kind":"MyApp","name":"app-1","uid":"u-1","controller":true,"blockOwnerDeletion":true}],` +
		`"managedFields":[{"manager":"metacel","operation":"Apply","apiVersion":"v1","time":"2026-11-23T20:25:55Z","fieldsType":"FieldsV1",` +
		`"fieldsV1":{"f:metadata":{"f:labels":{"f:app":{}}},"f:spec":{"f:containers":{"k:{\"name\":\"app-1\"}":{".":{}}}}}}]},` +
		`"spec":{"containers":[{"name":"app-1","image":"nginx","command":["/bin/sh","-c","echo \"}]{[\" \\"]}]},"status":{"phase":"Pending"}}`},
	{"escapes in keys and values, and unicode", `{ "apiVersion" : "v1" , "kind" : "ConfigMap" , "metadata" : { "name" : "caf\u00e9" ,` +
		` "labels" : { "a\"b" : "c\\d" , "e" : "" } , "annotations" : { "note" : "line\nnext \u2603 ☃ \"}\"" } ,` +
		` "generation" : 0 , "uid" : "u" } , "data" : { "x" : "{" } , "n" : -1.5e3 }`},
	{"nulls where fields may be null", `{"apiVersion":"v1","kind":"Secret","metadata":{"name":"s","labels":null,"annotations":null,` +
		`"creationTimestamp":null,"deletionTimestamp":null,"ownerReferences":null,"finalizers":null,"generateName":null},"type":null}`},
	{"only kubectl's annotation", `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"k","annotations":{"` + LastApplied + `":"{\"a\":1}"}},"data":{}}`},
	{"a bookmark", `{"kind":"MyApp","apiVersion":"demo.rtfm.co.ua/v1","metadata":{"resourceVersion":"99","creationTimestamp":null,"annotations":{"k8s.io/initial-events-end":"true"}}}`},
	{"no metadata", `{"apiVersion":"v1","kind":"List","items":[]}`},
}

// decodesAsTheStandardDecoder checks that the cached object o of data decodes (Unstructured) to
// what the standard decoder reads of data, less what Slim drops: the same body, and metadata that
// encodes to the same JSON.
func decodesAsTheStandardDecoder(data []byte, o *Object) error {
	if err := metadataMapIsTheJSONOfTheMetadata(o); err != nil {
		return err
	}
	got, err := o.decode()
	if err != nil {
		return fmt.Errorf("decode: %w", err)
	}
	var want map[string]any
	if err := utiljson.Unmarshal(data, &want); err != nil {
		return fmt.Errorf("the standard decoder: %w", err)
	}
	var wantMeta struct {
		Metadata metav1.ObjectMeta `json:"metadata"`
	}
	if err := utiljson.Unmarshal(data, &wantMeta); err != nil {
		return fmt.Errorf("the standard decoder: %w", err)
	}
	for i, e := range wantMeta.Metadata.ManagedFields {
		if e.Manager != "metacel" {
			wantMeta.Metadata.ManagedFields[i].FieldsV1 = nil
		}
	}
	wantMeta.Metadata.Annotations = withoutLastApplied(wantMeta.Metadata.Annotations)
	gotMeta, _ := got.Object["metadata"].(map[string]any)
	delete(got.Object, "metadata")
	delete(want, "metadata")
	if !reflect.DeepEqual(got.Object, want) {
		return fmt.Errorf("body:\ngot  %v\nwant %v", got.Object, want)
	}
	gotJSON, err := json.Marshal(gotMeta)
	if err != nil {
		return err
	}
	var gotTyped metav1.ObjectMeta
	if err := json.Unmarshal(gotJSON, &gotTyped); err != nil {
		return err
	}
	if a, b := asMap(gotTyped), asMap(wantMeta.Metadata); !reflect.DeepEqual(a, b) {
		return fmt.Errorf("metadata:\ngot  %v\nwant %v", a, b)
	}
	return nil
}

// metadataMapIsTheJSONOfTheMetadata checks that o's metadataMap is what encoding its metadata
// (with the managed fields) as JSON and decoding that gives.
func metadataMapIsTheJSONOfTheMetadata(o *Object) error {
	meta := o.fullMeta()
	data, err := json.Marshal(&meta)
	if err != nil {
		return err
	}
	want, err := unmarshalObject(data)
	if err != nil {
		return err
	}
	got, err := o.metadataMap()
	if err != nil {
		return err
	}
	if !reflect.DeepEqual(got, want) {
		return fmt.Errorf("metadataMap:\ngot  %#v\nwant %#v", got, want)
	}
	return nil
}

func TestMetadataMapIsTheJSONOfTheMetadata(t *testing.T) {
	for _, obj := range builtinObjects() {
		_, message := encodings(t, obj)
		o, err := decodeProtobufObject(message)
		if err != nil {
			t.Fatal(err)
		}
		if err := metadataMapIsTheJSONOfTheMetadata(o.(*Object)); err != nil {
			t.Errorf("%T: %v", obj, err)
		}
	}
}

// asMap is metadata as its JSON decodes to: a field set's keys in no order.
func asMap(meta metav1.ObjectMeta) map[string]any {
	data, _ := json.Marshal(meta)
	var m map[string]any
	_ = json.Unmarshal(data, &m)
	return m
}

// standardMeta is what the standard decoder makes of an object's type and metadata, without what
// a cache never holds (the managed fields, kubectl's last-applied copy).
func standardMeta(t *testing.T, data string) (metav1.TypeMeta, metav1.ObjectMeta) {
	t.Helper()
	var obj struct {
		metav1.TypeMeta `json:",inline"`
		Metadata        metav1.ObjectMeta `json:"metadata"`
	}
	if err := utiljson.Unmarshal([]byte(data), &obj); err != nil {
		t.Fatalf("the test's JSON: %v", err)
	}
	m := obj.Metadata
	m.ManagedFields = nil
	delete(m.Annotations, LastApplied)
	if len(m.Annotations) == 0 {
		m.Annotations = nil
	}
	if len(m.Labels) == 0 {
		m.Labels = nil
	}
	return obj.TypeMeta, m
}

func TestDecodeObjectReadsTheMetadataAsTheStandardDecoderDoes(t *testing.T) {
	for _, tc := range objects {
		t.Run(tc.name, func(t *testing.T) {
			got, err := decodeObject([]byte(tc.json))
			if err != nil {
				t.Fatal(err)
			}
			o := got.(*Object)
			typ, meta := standardMeta(t, tc.json)
			if o.typeMeta() != typ {
				t.Errorf("type: got %+v, want %+v", o.typeMeta(), typ)
			}
			held := o.objectMeta()
			if !reflect.DeepEqual(held, meta) {
				t.Errorf("metadata:\ngot  %+v\nwant %+v", held, meta)
			}
			if err := decodesAsTheStandardDecoder([]byte(tc.json), o); err != nil {
				t.Error(err)
			}
		})
	}
}

func TestDecodeObjectRejectsWhatIsNotAnObject(t *testing.T) {
	for _, bad := range []string{``, `[]`, `"x"`, `{"metadata":{"name":"x"`, `{"metadata":{"labels":{"a":1}}}`, `{"metadata":{"generation":"x"}}`} {
		if _, err := decodeObject([]byte(bad)); err == nil {
			t.Errorf("decodeObject(%q): no error", bad)
		}
	}
}

func TestAWatchEventIsSplitIntoItsTypeAndObject(t *testing.T) {
	event := `{"type":"MODIFIED","object":` + objects[1].json + `}`
	got, _, err := codec{}.Decode([]byte(event), nil, &metav1.WatchEvent{})
	if err != nil {
		t.Fatal(err)
	}
	e := got.(*metav1.WatchEvent)
	if e.Type != "MODIFIED" || string(e.Object.Raw) != objects[1].json {
		t.Errorf("got type %q and object %.40q...", e.Type, e.Object.Raw)
	}
}

// chunks reads data n bytes at a time, as a network stream may deliver it.
type chunks struct {
	data []byte
	n    int
}

func (c *chunks) Read(p []byte) (int, error) {
	if len(c.data) == 0 {
		return 0, io.EOF
	}
	n := min(c.n, len(p), len(c.data))
	copy(p, c.data[:n])
	c.data = c.data[n:]
	return n, nil
}

func (c *chunks) Close() error { return nil }

func TestTheFramerReturnsEachObjectOfAStreamWhateverTheReadSizes(t *testing.T) {
	var stream bytes.Buffer
	var want []string
	for i, o := range objects {
		event := `{"type":"ADDED","object":` + o.json + "}"
		want = append(want, event)
		stream.WriteString(event)
		stream.WriteString([]string{"\n", "", " \r\n\t"}[i%3])
	}
	big := `{"type":"ADDED","object":{"kind":"ConfigMap","data":{"x":"` + strings.Repeat(`a\"}`, 40000) + `"}}}`
	want = append(want, big)
	stream.WriteString(big)
	for _, size := range []int{1, 2, 3, 7, 64, 4096, frameReadSize, 1 << 20} {
		r := framer{}.NewFrameReader(&chunks{data: stream.Bytes(), n: size})
		// the streaming decoder starts with a small buffer and grows it on io.ErrShortBuffer
		d := streaming.NewDecoder(r, codec{})
		for i, w := range want {
			var e metav1.WatchEvent
			if _, _, err := d.Decode(nil, &e); err != nil {
				t.Fatalf("reads of %d bytes: object %d: %v", size, i, err)
			}
			if got := `{"type":"ADDED","object":` + string(e.Object.Raw) + "}"; got != w {
				t.Fatalf("reads of %d bytes: object %d:\ngot  %.80q\nwant %.80q", size, i, got, w)
			}
		}
		if _, _, err := d.Decode(nil, &metav1.WatchEvent{}); !errors.Is(err, io.EOF) {
			t.Errorf("reads of %d bytes: after the last object: %v, want EOF", size, err)
		}
	}
}

func TestTheFramerReportsAStreamCutInAnObject(t *testing.T) {
	r := framer{}.NewFrameReader(&chunks{data: []byte(`{"type":"ADDED","object":{"kind":"Pod","metadata":{"name":"a}"`), n: 5})
	if _, err := r.Read(make([]byte, 1024)); !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Errorf("got %v, want %v", err, io.ErrUnexpectedEOF)
	}
	r = framer{}.NewFrameReader(&chunks{data: []byte(` ["not", "an", "object"]`), n: 5})
	if _, err := r.Read(make([]byte, 1024)); !errors.Is(err, errNotAnObject) {
		t.Errorf("got %v, want %v", err, errNotAnObject)
	}
}
