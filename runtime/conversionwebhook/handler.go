package conversionwebhook

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"runtime/debug"
	"strings"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/klog/v2"

	"metacel.dev/metacel/runtime/jsonenc"
)

// MaxRequestBytes bounds a conversion request's body. The API server sends a read's objects in one
// request: one object of at most its own request limit (3 MiB), or a list's page at once
// (kubectl pages by 500), or an unpaged list whole; 64 MiB holds an unpaged list of 20,000
// parents of 3 KiB. A request over it is answered 413, and the API server fails that read.
const MaxRequestBytes = 64 << 20

// namedFailures is how many objects that failed to convert a failure's message names.
const namedFailures = 3

// Converter converts objects of one kind between the versions it serves.
type Converter interface {
	// Convert returns obj at toVersion, a group/version ("example.com/v1"): the result's
	// apiVersion is toVersion, its kind, name, namespace and uid are obj's. It may change obj.
	Convert(ctx context.Context, obj *unstructured.Unstructured, toVersion string) (*unstructured.Unstructured, error)
}

// Lookup returns the Converter of a kind; false when nothing converts it.
type Lookup func(gk schema.GroupKind) (Converter, bool)

// handler answers the API server's ConversionReviews.
type handler struct {
	lookup  Lookup
	metrics *Metrics
}

// NewHandler returns the handler of a CRD's conversion webhook: it answers a POST of an
// apiextensions.k8s.io/v1 ConversionReview with every object converted by the Converter lookup
// returns for its kind, or with a Failure that names each object that did not convert and no
// object at all. metrics may be nil.
func NewHandler(lookup Lookup, metrics *Metrics) http.Handler {
	return &handler{lookup: lookup, metrics: metrics}
}

func (h *handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	logger := klog.FromContext(r.Context())
	req, status, err := readRequest(w, r)
	if err != nil {
		logger.V(2).Info("Refused a conversion request", "remote", r.RemoteAddr, "err", err)
		http.Error(w, err.Error(), status)
		h.metrics.observe(resultBadRequest, 0, time.Since(start))
		return
	}
	resp := h.convert(r.Context(), req)
	result := resultSuccess
	if resp.Result.Status != metav1.StatusSuccess {
		result = resultFailure
		logger.V(1).Info("Conversion failed", "uid", req.UID, "objects", len(req.Objects), "desiredAPIVersion", req.DesiredAPIVersion, "err", resp.Result.Message)
	}
	writeResponse(r.Context(), w, resp)
	h.metrics.observe(result, len(req.Objects), time.Since(start))
}

// readRequest reads the ConversionReview's request; a request that is not one is an error with
// the HTTP status to answer it.
func readRequest(w http.ResponseWriter, r *http.Request) (*apiextensionsv1.ConversionRequest, int, error) {
	if r.Method != http.MethodPost {
		return nil, http.StatusBadRequest, fmt.Errorf("a conversion request is a POST, not a %s", r.Method)
	}
	if ct := r.Header.Get("Content-Type"); ct != "" {
		if mt, _, err := mime.ParseMediaType(ct); err != nil || mt != "application/json" {
			return nil, http.StatusBadRequest, fmt.Errorf("a conversion request is application/json, not %q", ct)
		}
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, MaxRequestBytes))
	if tooLarge := (*http.MaxBytesError)(nil); errors.As(err, &tooLarge) {
		return nil, http.StatusRequestEntityTooLarge, fmt.Errorf("the request's body is over %d bytes", tooLarge.Limit)
	}
	if err != nil {
		return nil, http.StatusBadRequest, fmt.Errorf("reading the request's body: %w", err)
	}
	var review apiextensionsv1.ConversionReview
	if err := json.Unmarshal(body, &review); err != nil {
		return nil, http.StatusBadRequest, fmt.Errorf("the body is not a ConversionReview in JSON: %w", err)
	}
	if gvk := review.GroupVersionKind(); gvk != apiextensionsv1.SchemeGroupVersion.WithKind("ConversionReview") {
		return nil, http.StatusBadRequest, fmt.Errorf("the body is a %q of %q, not a ConversionReview of %q", gvk.Kind, gvk.GroupVersion(), apiextensionsv1.SchemeGroupVersion)
	}
	if review.Request == nil {
		return nil, http.StatusBadRequest, errors.New("the ConversionReview has no request")
	}
	return review.Request, 0, nil
}

func writeResponse(ctx context.Context, w http.ResponseWriter, resp *apiextensionsv1.ConversionResponse) {
	review := apiextensionsv1.ConversionReview{
		TypeMeta: metav1.TypeMeta{APIVersion: apiextensionsv1.SchemeGroupVersion.String(), Kind: "ConversionReview"},
		Response: resp,
	}
	w.Header().Set("Content-Type", "application/json")
	if err := json.NewEncoder(w).Encode(review); err != nil {
		klog.FromContext(ctx).V(1).Info("Writing a conversion response failed", "uid", resp.UID, "err", err)
	}
}

// convert answers req: every object converted, or a Failure and none.
func (h *handler) convert(ctx context.Context, req *apiextensionsv1.ConversionRequest) *apiextensionsv1.ConversionResponse {
	resp := &apiextensionsv1.ConversionResponse{UID: req.UID}
	converted, err := h.convertAll(ctx, req.Objects, req.DesiredAPIVersion)
	if err != nil {
		resp.Result = metav1.Status{Status: metav1.StatusFailure, Message: err.Error()}
		return resp
	}
	resp.ConvertedObjects = converted
	resp.Result = metav1.Status{Status: metav1.StatusSuccess}
	return resp
}

// convertAll converts every object to version to; an error names each object that did not
// convert (the first few, and how many more).
func (h *handler) convertAll(ctx context.Context, objects []runtime.RawExtension, to string) ([]runtime.RawExtension, error) {
	if gv, err := schema.ParseGroupVersion(to); err != nil || gv.Group == "" || gv.Version == "" {
		return nil, fmt.Errorf("the desired API version %q is not a group/version", to)
	}
	converted := make([]runtime.RawExtension, len(objects))
	var failed []string
	for i, raw := range objects {
		c, err := h.convertOne(ctx, raw, to)
		if err != nil {
			failed = append(failed, fmt.Sprintf("object %d: %v", i, err))
			continue
		}
		converted[i] = c
	}
	if len(failed) == 0 {
		return converted, nil
	}
	return nil, failure(failed, len(objects))
}

// failure is the error of a request in which the objects failed did not convert.
func failure(failed []string, total int) error {
	if len(failed) == 1 {
		return errors.New(failed[0])
	}
	msg := fmt.Sprintf("%d of %d objects did not convert: %s", len(failed), total, strings.Join(failed[:min(len(failed), namedFailures)], "; "))
	if more := len(failed) - namedFailures; more > 0 {
		msg += fmt.Sprintf("; and %d more", more)
	}
	return errors.New(msg)
}

// convertOne converts one object of the request; one already at version to is returned as sent.
func (h *handler) convertOne(ctx context.Context, raw runtime.RawExtension, to string) (runtime.RawExtension, error) {
	obj := &unstructured.Unstructured{}
	if err := obj.UnmarshalJSON(raw.Raw); err != nil {
		return runtime.RawExtension{}, fmt.Errorf("does not decode: %w", err)
	}
	from := obj.GetAPIVersion()
	if from == to {
		return raw, nil
	}
	name := fmt.Sprintf("%s %q from %s to %s", obj.GetKind(), klog.KObj(obj).String(), from, to)
	out, err := h.convertObject(ctx, obj, to)
	if err != nil {
		return runtime.RawExtension{}, fmt.Errorf("converting %s: %w", name, err)
	}
	b, err := jsonenc.Marshal(out.Object)
	if err != nil {
		return runtime.RawExtension{}, fmt.Errorf("encoding %s: %w", name, err)
	}
	return runtime.RawExtension{Raw: b}, nil
}

// identity is what a conversion must keep of an object, as the API server checks it.
type identity struct {
	kind, namespace, name, uid string
}

func identityOf(obj *unstructured.Unstructured) identity {
	return identity{kind: obj.GetKind(), namespace: obj.GetNamespace(), name: obj.GetName(), uid: string(obj.GetUID())}
}

// convertObject converts obj with its kind's Converter, and checks the result is obj at version
// to; a Converter that panics is an error.
func (h *handler) convertObject(ctx context.Context, obj *unstructured.Unstructured, to string) (out *unstructured.Unstructured, err error) {
	gk := obj.GroupVersionKind().GroupKind()
	c, ok := h.lookup(gk)
	if !ok {
		return nil, fmt.Errorf("no conversion is known for kind %q", gk)
	}
	want := identityOf(obj)
	defer func() {
		if r := recover(); r != nil {
			klog.FromContext(ctx).Error(nil, "Conversion panicked", "object", klog.KObj(obj), "panic", r, "stack", string(debug.Stack()))
			out, err = nil, fmt.Errorf("the conversion panicked: %v", r)
		}
	}()
	out, err = c.Convert(ctx, obj, to)
	if err != nil {
		return nil, err
	}
	if out == nil {
		return nil, errors.New("the conversion returned no object")
	}
	if got := out.GetAPIVersion(); got != to {
		return nil, fmt.Errorf("the conversion returned apiVersion %q", got)
	}
	if got := identityOf(out); got != want {
		return nil, fmt.Errorf("the conversion returned another object (kind, namespace, name, uid %q, want %q)", got, want)
	}
	return out, nil
}
