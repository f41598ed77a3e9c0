package apply

import (
	"io"
	"net/http"
	"net/http/httptest"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"
)

// A status apply through the raw client is the request the dynamic client would send, and its
// answer is not decoded, except an error's Status.
func TestAStatusApplyThroughTheRawClient(t *testing.T) {
	gadgets := schema.GroupVersionResource{Group: "example.com", Version: "v1", Resource: "gadgets"}
	parent := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "example.com/v1", "kind": "Gadget",
		"metadata": map[string]any{"name": "g", "namespace": "ns"}}}
	tests := []struct {
		name    string
		code    int
		answer  string
		invalid bool
	}{
		{"accepted", http.StatusOK, `{"not": "decoded"`, false},
		{"refused", http.StatusUnprocessableEntity, `{"kind":"Status","apiVersion":"v1","status":"Failure","reason":"Invalid","code":422,"message":"status.size: Invalid value"}`, true},
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
			rc, err := NewRawClient(&rest.Config{Host: ts.URL})
			if err != nil {
				t.Fatal(err)
			}
			_, err = NewWriter(nil).WithRawClient(rc).ApplyStatus(t.Context(), gadgets, parent, map[string]any{"size": int64(3)})
			if apierrors.IsInvalid(err) != tt.invalid || (err != nil) != tt.invalid {
				t.Errorf("error %v, want invalid %v", err, tt.invalid)
			}
			if got.Method != http.MethodPatch || got.URL.Path != "/apis/example.com/v1/namespaces/ns/gadgets/g/status" ||
				got.URL.Query().Get("fieldManager") != FieldManager || got.URL.Query().Get("force") != "true" ||
				got.Header.Get("Content-Type") != "application/apply-patch+yaml" {
				t.Errorf("request %s %s (%s)", got.Method, got.URL, got.Header.Get("Content-Type"))
			}
			if want := `{"apiVersion":"example.com/v1","kind":"Gadget","metadata":{"name":"g","namespace":"ns"},"status":{"size":3}}`; string(body) != want {
				t.Errorf("body %s\nwant %s", body, want)
			}
		})
	}
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}
