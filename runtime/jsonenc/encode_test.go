package jsonenc

import (
	"encoding/json"
	"math"
	"testing"

	utiljson "k8s.io/apimachinery/pkg/util/json"
)

// unstructured decodes JSON as the API machinery does (integers as int64).
func unstructured(t testing.TB, data string) any {
	t.Helper()
	var v any
	if err := utiljson.Unmarshal([]byte(data), &v); err != nil {
		t.Fatal(err)
	}
	return v
}

func TestMarshalWritesWhatEncodingJSONWrites(t *testing.T) {
	tests := []struct {
		name string
		v    any
	}{
		{"an object, its keys sorted", unstructured(t, `{"b":1,"a":{"d":[1,"x",null,true],"c":false},"":0}`)},
		{"an empty object and an empty list", unstructured(t, `{"m":{},"l":[]}`)},
		{"a nil map and a nil list", map[string]any{"m": map[string]any(nil), "l": []any(nil)}},
		{"HTML characters", "<a href=\"x\">&amp;</a>"},
		{"control characters and their short escapes", "\x00\x01\b\f\n\r\t\x1f\x7f\\"},
		{"JavaScript line separators", "a\u2028b\u2029c"},
		{"invalid UTF-8", "a\xffb\xc3(c\xed\xa0\x80"},
		{"multi-byte characters", "日本語 ü 🎉"},
		{"integers", []any{int64(0), int64(-1), int64(math.MaxInt64), int64(math.MinInt64)}},
		{"floats without an exponent", []any{0.5, math.Copysign(0, -1), 1e-6, 123456789.125, 1e20}},
		{"floats with an exponent", []any{1e-7, 1.5e-10, 1e21, -2.5e300, math.SmallestNonzeroFloat64}},
		{"other types, as encoding/json writes them", map[string]any{"i": 3, "s": []string{"<"}, "n": json.Number("12")}},
		{"a rendered Pod", unstructured(t, `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"a-pod","labels":{"app":"a","metacel.dev/parent-uid":"0f6d"},"ownerReferences":[{"apiVersion":"demo.rtfm.co.ua/v1","blockOwnerDeletion":true,"controller":true,"kind":"MyApp","name":"a","uid":"0f6d"}]},"spec":{"containers":[{"name":"a","image":"nginx:1.27","command":["/bin/sh","-c","if [ -n \"$BANNER\" ]; then echo \"$BANNER\"; fi; exec sleep infinity"],"ports":[{"containerPort":80}]}]}}`)},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			want, err := json.Marshal(tc.v)
			if err != nil {
				t.Fatal(err)
			}
			got, err := Marshal(tc.v)
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != string(want) {
				t.Errorf("Marshal = %s\nencoding/json: %s", got, want)
			}
		})
	}
}

func TestMarshalFailsWhereEncodingJSONFails(t *testing.T) {
	for _, v := range []any{math.NaN(), map[string]any{"a": []any{math.Inf(1)}}, map[string]any{"c": make(chan int)}} {
		if _, err := Marshal(v); err == nil {
			t.Errorf("Marshal(%v): no error, encoding/json has one", v)
		}
	}
}

// FuzzMarshal checks Marshal against encoding/json on any JSON document (decoded as the API
// machinery decodes it), any string and any float.
func FuzzMarshal(f *testing.F) {
	f.Add([]byte(`{"a":[1,2.5,"<\u2028>",null,{"b":true}],"":{}}`), "a\xff\u2029<&>\x00", 1e-7)
	f.Add([]byte(`[1e21,-0.0,123456789012345678]`), "日本", 1e21)
	f.Fuzz(func(t *testing.T, data []byte, s string, x float64) {
		var doc any
		if utiljson.Unmarshal(data, &doc) != nil {
			doc = nil
		}
		for _, v := range []any{doc, s, map[string]any{s: x}} {
			want, errWant := json.Marshal(v)
			got, err := Marshal(v)
			if (err != nil) != (errWant != nil) || string(got) != string(want) {
				t.Fatalf("Marshal(%#v) = %s, %v; encoding/json: %s, %v", v, got, err, want, errWant)
			}
		}
	})
}

func BenchmarkMarshal(b *testing.B) {
	pod := unstructured(b, `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"a-pod","labels":{"app":"a","metacel.dev/managed-by":"metacel","metacel.dev/policy":"myapp","metacel.dev/parent-uid":"0f6d5c1e-8b1a-4a4e-9d7c-1b2e3f4a5b6c","metacel.dev/child-id":"pod","metacel.dev/shard-slot":"23"},"ownerReferences":[{"apiVersion":"demo.rtfm.co.ua/v1","blockOwnerDeletion":true,"controller":true,"kind":"MyApp","name":"a","uid":"0f6d5c1e-8b1a-4a4e-9d7c-1b2e3f4a5b6c"}]},"spec":{"containers":[{"name":"a","image":"nginx:1.27","command":["/bin/sh","-c","if [ -n \"$BANNER\" ]; then echo \"$BANNER\"; fi; exec sleep infinity"],"ports":[{"containerPort":80}]}]}}`)
	b.Run("jsonenc", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := Marshal(pod); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("encoding-json", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := json.Marshal(pod); err != nil {
				b.Fatal(err)
			}
		}
	})
}
