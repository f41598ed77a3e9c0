package apply_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"

	"metacel.dev/metacel/runtime/apply"
	"metacel.dev/metacel/runtime/compact"
)

var gadgets = schema.GroupVersionResource{Group: "example.com", Version: "v1", Resource: "gadgets"}

// stored is an object as the API server returns it for a write.
const stored = `{"apiVersion":"example.com/v1","kind":"Gadget","metadata":{"name":"g","namespace":"ns","uid":"u-1","resourceVersion":"42",` +
	`"managedFields":[{"manager":"metacel","operation":"Apply","fieldsType":"FieldsV1","fieldsV1":{"f:spec":{"f:size":{}}}}]},"spec":{"size":3}}`

const invalid = `{"kind":"Status","apiVersion":"v1","status":"Failure","reason":"Invalid","code":422,"message":"spec.size: Invalid value"}`

// A write through the raw client is the request the dynamic client would send, and what the API
// server returns is read by compact's decoders: the whole object for a create or an apply, only
// the metadata for a status apply; an error keeps its Status.
func TestWritesThroughTheRawClient(t *testing.T) {
	gadget := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "example.com/v1", "kind": "Gadget",
		"metadata": map[string]any{"name": "g", "namespace": "ns"}, "spec": map[string]any{"size": int64(3)}}}
	const body = `{"apiVersion":"example.com/v1","kind":"Gadget","metadata":{"name":"g","namespace":"ns"},"spec":{"size":3}}`
	const statusBody = `{"apiVersion":"example.com/v1","kind":"Gadget","metadata":{"name":"g","namespace":"ns"},"status":{"size":3}}`
	type write struct {
		send                                   func(ctx context.Context, w *apply.Writer) (metav1.Object, error)
		method, path, query, contentType, body string
	}
	create := write{
		send: func(ctx context.Context, w *apply.Writer) (metav1.Object, error) {
			return object(w.Create(ctx, gadgets, gadget))
		},
		method: http.MethodPost, path: "/apis/example.com/v1/namespaces/ns/gadgets", query: "fieldManager=metacel", contentType: "application/json", body: body,
	}
	applyGadget := write{
		send: func(ctx context.Context, w *apply.Writer) (metav1.Object, error) {
			return object(w.Apply(ctx, gadgets, gadget, nil))
		},
		method: http.MethodPatch, path: "/apis/example.com/v1/namespaces/ns/gadgets/g", query: "fieldManager=metacel&force=true", contentType: "application/apply-patch+yaml", body: body,
	}
	applyStatus := write{
		send: func(ctx context.Context, w *apply.Writer) (metav1.Object, error) {
			return meta(w.ApplyStatus(ctx, gadgets, gadget, map[string]any{"size": int64(3)}))
		},
		method: http.MethodPatch, path: "/apis/example.com/v1/namespaces/ns/gadgets/g/status", query: "fieldManager=metacel&force=true", contentType: "application/apply-patch+yaml", body: statusBody,
	}
	const alreadyExists = `{"kind":"Status","apiVersion":"v1","status":"Failure","reason":"AlreadyExists","code":409,"message":"gadgets \"g\" already exists","details":{"name":"g","kind":"gadgets"}}`
	tests := []struct {
		name    string
		write   write
		code    int
		answer  string
		wantErr func(error) bool
		// wantRV is the resourceVersion read from the answer ("" for none)
		wantRV string
	}{
		{name: "a create returns the object stored", write: create, code: http.StatusCreated, answer: stored, wantRV: "42"},
		{name: "a create of a name taken is AlreadyExists", write: create, code: http.StatusConflict, answer: alreadyExists, wantErr: apierrors.IsAlreadyExists},
		{name: "an apply returns the object stored", write: applyGadget, code: http.StatusOK, answer: stored, wantRV: "42"},
		{name: "a refused apply is Invalid", write: applyGadget, code: http.StatusUnprocessableEntity, answer: invalid, wantErr: apierrors.IsInvalid},
		{name: "a status apply returns the metadata stored", write: applyStatus, code: http.StatusOK, answer: stored, wantRV: "42"},
		{name: "a status apply whose answer cannot be read is written", write: applyStatus, code: http.StatusOK, answer: `{"not": "decoded"`},
		{name: "a refused status apply is Invalid", write: applyStatus, code: http.StatusUnprocessableEntity, answer: invalid, wantErr: apierrors.IsInvalid},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got *http.Request
			var body []byte
			ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				got, body = r, must(io.ReadAll(r.Body))
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(tt.code)
				_, _ = io.WriteString(w, tt.answer)
			}))
			defer ts.Close()
			rc, err := apply.NewRawClient(&rest.Config{Host: ts.URL})
			if err != nil {
				t.Fatal(err)
			}
			written, err := tt.write.send(t.Context(), apply.NewWriter(nil).WithRawClient(rc, compact.Responses{}))
			switch {
			case tt.wantErr != nil && !tt.wantErr(err):
				t.Errorf("error %v", err)
			case tt.wantErr == nil && err != nil:
				t.Errorf("error %v, want none", err)
			}
			if rv := resourceVersion(written); rv != tt.wantRV {
				t.Errorf("resourceVersion read from the answer %q, want %q", rv, tt.wantRV)
			}
			want := tt.write
			if got.Method != want.method || got.URL.Path != want.path || got.URL.RawQuery != want.query || got.Header.Get("Content-Type") != want.contentType {
				t.Errorf("request %s %s (%s), want %s %s?%s (%s)", got.Method, got.URL, got.Header.Get("Content-Type"), want.method, want.path, want.query, want.contentType)
			}
			if string(body) != want.body {
				t.Errorf("body %s\nwant %s", body, want.body)
			}
		})
	}
}

// A created or applied object is returned whole, managed fields included: metacel's entry says
// what it applied.
func TestAWriteReturnsTheWholeObject(t *testing.T) {
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, stored)
	}))
	defer ts.Close()
	rc := must(apply.NewRawClient(&rest.Config{Host: ts.URL}))
	gadget := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "example.com/v1", "kind": "Gadget", "metadata": map[string]any{"name": "g", "namespace": "ns"}}}
	got, err := apply.NewWriter(nil).WithRawClient(rc, compact.Responses{}).Apply(t.Context(), gadgets, gadget, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got.GetUID() != types.UID("u-1") || len(got.GetManagedFields()) != 1 || got.GetManagedFields()[0].FieldsV1 == nil {
		t.Errorf("got %v", got.Object)
	}
	if size, _, _ := unstructured.NestedInt64(got.Object, "spec", "size"); size != 3 {
		t.Errorf("spec.size %d, want 3 (an int64, as the API machinery decodes it)", size)
	}
}

// object and meta return what a write returned as a metav1.Object, nil when none.
func object(u *unstructured.Unstructured, err error) (metav1.Object, error) {
	if u == nil {
		return nil, err
	}
	return u, err
}

func meta(m *metav1.ObjectMeta, err error) (metav1.Object, error) {
	if m == nil {
		return nil, err
	}
	return m, err
}

func resourceVersion(o metav1.Object) string {
	if o == nil {
		return ""
	}
	return o.GetResourceVersion()
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}
