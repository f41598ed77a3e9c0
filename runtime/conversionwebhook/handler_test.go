package conversionwebhook

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
)

const (
	v1alpha1 = "example.com/v1alpha1"
	v1       = "example.com/v1"
)

var myApps = schema.GroupKind{Group: "example.com", Kind: "MyApp"}

// sizeToReplicas converts MyApps from v1alpha1 (spec.size, a string) to v1 (spec.replicas);
// a size that is not a number does not convert, a size "rename" renames the object, "panic"
// panics.
type sizeToReplicas struct{}

func (sizeToReplicas) Convert(_ context.Context, obj *unstructured.Unstructured, to string) (*unstructured.Unstructured, error) {
	size, _, _ := unstructured.NestedString(obj.Object, "spec", "size")
	switch size {
	case "rename":
		obj.SetName("other")
	case "panic":
		panic("size panics")
	default:
		n, err := strconv.Atoi(size)
		if err != nil {
			return nil, fmt.Errorf("spec.size %q is not a number", size)
		}
		unstructured.RemoveNestedField(obj.Object, "spec", "size")
		if err := unstructured.SetNestedField(obj.Object, int64(n), "spec", "replicas"); err != nil {
			return nil, err
		}
	}
	obj.SetAPIVersion(to)
	return obj, nil
}

func lookup(gk schema.GroupKind) (Converter, bool) {
	if gk == myApps {
		return sizeToReplicas{}, true
	}
	return nil, false
}

func myApp(apiVersion, name, size string) runtime.RawExtension {
	obj := map[string]any{
		"apiVersion": apiVersion,
		"kind":       "MyApp",
		"metadata":   map[string]any{"name": name, "namespace": "default", "uid": "uid-" + name},
		"spec":       map[string]any{"size": size},
	}
	if apiVersion == v1 {
		obj["spec"] = map[string]any{"replicas": int64(1)}
	}
	b, err := json.Marshal(obj)
	if err != nil {
		panic(err)
	}
	return runtime.RawExtension{Raw: b}
}

func review(to string, objects ...runtime.RawExtension) []byte {
	b, err := json.Marshal(apiextensionsv1.ConversionReview{
		TypeMeta: metav1.TypeMeta{APIVersion: "apiextensions.k8s.io/v1", Kind: "ConversionReview"},
		Request:  &apiextensionsv1.ConversionRequest{UID: types.UID("request-1"), DesiredAPIVersion: to, Objects: objects},
	})
	if err != nil {
		panic(err)
	}
	return b
}

func post(h http.Handler, body []byte) *httptest.ResponseRecorder {
	r := httptest.NewRequest(http.MethodPost, Path, bytes.NewReader(body))
	r.Header.Set("Content-Type", "application/json")
	// the panicking conversion's stack is logged: not in the test's output
	r = r.WithContext(klog.NewContext(r.Context(), logr.Discard()))
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	return w
}

func decodeResponse(t *testing.T, body []byte) *apiextensionsv1.ConversionResponse {
	t.Helper()
	var got apiextensionsv1.ConversionReview
	if err := json.Unmarshal(body, &got); err != nil {
		t.Fatalf("the response is not a ConversionReview: %v\n%s", err, body)
	}
	if got.APIVersion != "apiextensions.k8s.io/v1" || got.Kind != "ConversionReview" || got.Response == nil {
		t.Fatalf("the response is not a ConversionReview with a response: %s", body)
	}
	return got.Response
}

func TestHandlerConverts(t *testing.T) {
	tests := []struct {
		name    string
		to      string
		objects []runtime.RawExtension
		// want is each converted object's spec, when the conversion succeeds
		want []string
		// wantFailure are parts of the failure's message, when it fails
		wantFailure []string
	}{
		{
			name:    "every object of a list is converted, in order",
			to:      v1,
			objects: []runtime.RawExtension{myApp(v1alpha1, "a", "1"), myApp(v1alpha1, "b", "2"), myApp(v1alpha1, "c", "3")},
			want:    []string{`{"replicas":1}`, `{"replicas":2}`, `{"replicas":3}`},
		},
		{
			name:    "an object already at the desired version passes through unchanged",
			to:      v1,
			objects: []runtime.RawExtension{myApp(v1, "a", ""), myApp(v1alpha1, "b", "2")},
			want:    []string{`{"replicas":1}`, `{"replicas":2}`},
		},
		{
			name:        "a failure names the object, its versions and the error, and returns no object",
			to:          v1,
			objects:     []runtime.RawExtension{myApp(v1alpha1, "a", "1"), myApp(v1alpha1, "b", "three")},
			wantFailure: []string{`object 1: converting MyApp "default/b" from example.com/v1alpha1 to example.com/v1: spec.size "three" is not a number`},
		},
		{
			name:        "several failures are counted, the first few named",
			to:          v1,
			objects:     []runtime.RawExtension{myApp(v1alpha1, "a", "x"), myApp(v1alpha1, "b", "x"), myApp(v1alpha1, "c", "x"), myApp(v1alpha1, "d", "x"), myApp(v1alpha1, "e", "1")},
			wantFailure: []string{"4 of 5 objects did not convert: object 0: ", `"default/a"`, `"default/c"`, "; and 1 more"},
		},
		{
			name: "a kind nothing converts is a failure",
			to:   v1,
			objects: []runtime.RawExtension{{Raw: []byte(
				`{"apiVersion":"example.com/v1alpha1","kind":"Other","metadata":{"name":"o","namespace":"default"}}`)}},
			wantFailure: []string{`converting Other "default/o"`, `no conversion is known for kind "Other.example.com"`},
		},
		{
			name:        "a conversion that returns another object is a failure",
			to:          v1,
			objects:     []runtime.RawExtension{myApp(v1alpha1, "a", "rename")},
			wantFailure: []string{`converting MyApp "default/a"`, "the conversion returned another object"},
		},
		{
			name:        "a conversion that panics is a failure",
			to:          v1,
			objects:     []runtime.RawExtension{myApp(v1alpha1, "a", "panic")},
			wantFailure: []string{`converting MyApp "default/a"`, "the conversion panicked: size panics"},
		},
		{
			name:        "an object that does not decode is a failure",
			to:          v1,
			objects:     []runtime.RawExtension{{Raw: []byte(`{"apiVersion":"example.com/v1alpha1"}`)}},
			wantFailure: []string{"object 0: does not decode"},
		},
		{
			name:        "a desired version that is not a group/version is a failure",
			to:          "v1",
			objects:     []runtime.RawExtension{myApp(v1alpha1, "a", "1")},
			wantFailure: []string{`the desired API version "v1" is not a group/version`},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := post(NewHandler(lookup, nil), review(tt.to, tt.objects...))
			if w.Code != http.StatusOK {
				t.Fatalf("status %d: %s", w.Code, w.Body)
			}
			resp := decodeResponse(t, w.Body.Bytes())
			if resp.UID != "request-1" {
				t.Errorf("uid = %q, want the request's", resp.UID)
			}
			if tt.wantFailure != nil {
				checkFailure(t, resp, tt.wantFailure)
				return
			}
			checkConverted(t, resp, tt.to, tt.objects, tt.want)
		})
	}
}

func checkFailure(t *testing.T, resp *apiextensionsv1.ConversionResponse, want []string) {
	t.Helper()
	if resp.Result.Status != metav1.StatusFailure {
		t.Errorf("status = %q, want Failure", resp.Result.Status)
	}
	for _, part := range want {
		if !strings.Contains(resp.Result.Message, part) {
			t.Errorf("message %q does not say %q", resp.Result.Message, part)
		}
	}
	if resp.ConvertedObjects != nil {
		t.Errorf("a failure returns %d objects, want none", len(resp.ConvertedObjects))
	}
}

func checkConverted(t *testing.T, resp *apiextensionsv1.ConversionResponse, to string, sent []runtime.RawExtension, want []string) {
	t.Helper()
	if resp.Result.Status != metav1.StatusSuccess {
		t.Fatalf("status = %q (%s), want Success", resp.Result.Status, resp.Result.Message)
	}
	if len(resp.ConvertedObjects) != len(want) {
		t.Fatalf("%d objects converted, want %d", len(resp.ConvertedObjects), len(want))
	}
	for i, raw := range resp.ConvertedObjects {
		var obj unstructured.Unstructured
		if err := obj.UnmarshalJSON(raw.Raw); err != nil {
			t.Fatalf("object %d: %v", i, err)
		}
		spec, _ := json.Marshal(obj.Object["spec"])
		if obj.GetAPIVersion() != to || string(spec) != want[i] {
			t.Errorf("object %d is %s with spec %s, want %s with %s", i, obj.GetAPIVersion(), spec, to, want[i])
		}
		var in unstructured.Unstructured
		_ = in.UnmarshalJSON(sent[i].Raw)
		if in.GetAPIVersion() == to && !bytes.Equal(raw.Raw, sent[i].Raw) {
			t.Errorf("object %d, sent at the desired version, came back changed: %s", i, raw.Raw)
		}
	}
}

func TestHandlerRefusesBadRequests(t *testing.T) {
	tests := []struct {
		name        string
		method      string
		contentType string
		body        []byte
		wantStatus  int
		wantMessage string
	}{
		{"a GET", http.MethodGet, "application/json", review(v1), http.StatusBadRequest, "a conversion request is a POST, not a GET"},
		{"another content type", http.MethodPost, "text/plain", review(v1), http.StatusBadRequest, `application/json, not "text/plain"`},
		{"a body that is not JSON", http.MethodPost, "application/json", []byte("convert please"), http.StatusBadRequest, "not a ConversionReview in JSON"},
		{"a review with no request", http.MethodPost, "application/json", []byte(`{"apiVersion":"apiextensions.k8s.io/v1","kind":"ConversionReview"}`), http.StatusBadRequest, "has no request"},
		{"a review of another version", http.MethodPost, "application/json", bytes.Replace(review(v1), []byte("apiextensions.k8s.io/v1"), []byte("apiextensions.k8s.io/v1beta1"), 1), http.StatusBadRequest, `"apiextensions.k8s.io/v1beta1"`},
		{"a body over the bound", http.MethodPost, "application/json", bytes.Repeat([]byte(" "), MaxRequestBytes+1), http.StatusRequestEntityTooLarge, "over 67108864 bytes"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := httptest.NewRequest(tt.method, Path, bytes.NewReader(tt.body))
			r.Header.Set("Content-Type", tt.contentType)
			w := httptest.NewRecorder()
			NewHandler(lookup, nil).ServeHTTP(w, r)
			if w.Code != tt.wantStatus || !strings.Contains(w.Body.String(), tt.wantMessage) {
				t.Errorf("answer %d %q, want %d saying %q", w.Code, w.Body, tt.wantStatus, tt.wantMessage)
			}
		})
	}
}

func TestHandlerMetrics(t *testing.T) {
	reg := prometheus.NewPedanticRegistry()
	h := NewHandler(lookup, NewMetrics(reg))
	post(h, review(v1, myApp(v1alpha1, "a", "1"), myApp(v1alpha1, "b", "2")))
	post(h, review(v1, myApp(v1alpha1, "a", "x")))
	post(h, []byte("{"))

	m := NewHandler(lookup, nil).(*handler).metrics
	if m != nil {
		t.Fatal("a handler with no metrics has some")
	}
	metrics := h.(*handler).metrics
	tests := []struct {
		name string
		got  prometheus.Collector
		want float64
	}{
		{"a request converted", metrics.requests.WithLabelValues("success"), 1},
		{"a request failed", metrics.requests.WithLabelValues("failure"), 1},
		{"a bad request", metrics.requests.WithLabelValues("bad_request"), 1},
		{"the objects of the reviews", metrics.objects, 3},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := testutil.ToFloat64(tt.got); got != tt.want {
				t.Errorf("= %v, want %v", got, tt.want)
			}
		})
	}
	if n := testutil.CollectAndCount(metrics.duration); n != 1 {
		t.Errorf("the duration histogram has %d series, want 1", n)
	}
	if problems, err := testutil.GatherAndLint(reg); err != nil || len(problems) > 0 {
		t.Errorf("lint: %v %v", problems, err)
	}
}

// errConverter fails every conversion with err.
type errConverter struct{ err error }

func (c errConverter) Convert(context.Context, *unstructured.Unstructured, string) (*unstructured.Unstructured, error) {
	return nil, c.err
}

func TestAConvertersErrorIsWrapped(t *testing.T) {
	cause := errors.New("no such field")
	h := &handler{lookup: func(schema.GroupKind) (Converter, bool) { return errConverter{cause}, true }}
	_, err := h.convertObject(t.Context(), &unstructured.Unstructured{Object: map[string]any{"apiVersion": v1alpha1, "kind": "MyApp"}}, v1)
	if !errors.Is(err, cause) {
		t.Errorf("error %v does not wrap the converter's", err)
	}
}
