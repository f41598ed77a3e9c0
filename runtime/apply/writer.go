package apply

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/csaupgrade"
	"k8s.io/client-go/util/retry"
	"k8s.io/klog/v2"

	"metacel.dev/metacel/runtime/jsonenc"
)

// FieldManager is the field manager of every write.
const FieldManager = "metacel"

// RequestTimeout bounds every request of a Writer: a hung connection must not hold a worker (and
// its parent) for ever. Informers' watches are not requests of a Writer.
const RequestTimeout = 30 * time.Second

// Writer makes metacel's writes.
type Writer struct {
	client dynamic.Interface
	// raw, when set, sends the creates and applies, and decode reads their responses: the
	// dynamic client would decode each response twice (its kind first, with encoding/json, then
	// into maps), and a status apply's whole object where only its metadata is read
	raw    rest.Interface
	decode ResponseDecoder
}

// ResponseDecoder reads the object the API server returns for a write (package compact's
// Responses, whose decoders skip what is not read).
type ResponseDecoder interface {
	// Object decodes the whole object.
	Object(data []byte) (*unstructured.Unstructured, error)
	// Metadata decodes its metadata only, without the managed fields.
	Metadata(data []byte) (*metav1.ObjectMeta, error)
}

// NewWriter returns a Writer over a dynamic client.
func NewWriter(client dynamic.Interface) *Writer { return &Writer{client: client} }

// Client returns the dynamic client w writes with (the identity its policy acts as): a decision
// that must not trust a cache reads the API server with it (package clusterread's List, which
// lists page by page).
func (w *Writer) Client() dynamic.Interface { return w.client }

// WithRawClient has w send its creates and applies through rc, a REST client of the same API
// server that leaves responses undecoded (NewRawClient), and read what they return with d.
func (w *Writer) WithRawClient(rc rest.Interface, d ResponseDecoder) *Writer {
	w.raw, w.decode = rc, d
	return w
}

// NewRawClient returns a REST client for WithRawClient: JSON requests, any path; only an error's
// Status is ever decoded.
func NewRawClient(cfg *rest.Config) (rest.Interface, error) {
	c := rest.CopyConfig(cfg)
	c.ContentConfig = rest.ContentConfig{
		AcceptContentTypes:   "application/json",
		ContentType:          "application/json",
		NegotiatedSerializer: scheme.Codecs.WithoutConversion(),
	}
	rc, err := rest.UnversionedRESTClientFor(c)
	if err != nil {
		return nil, fmt.Errorf("raw client: %w", err)
	}
	return rc, nil
}

// collection is the URL path of a resource's objects in a namespace ("": all, or cluster-scoped).
func collection(gvr schema.GroupVersionResource, namespace string) []string {
	p := []string{"/apis", gvr.Group, gvr.Version}
	if gvr.Group == "" {
		p = []string{"/api", gvr.Version}
	}
	if namespace != "" {
		p = append(p, "namespaces", namespace)
	}
	return append(p, gvr.Resource)
}

// path is the URL path of an object or of its subresource.
func path(gvr schema.GroupVersionResource, namespace, name string, subresource ...string) []string {
	return append(append(collection(gvr, namespace), name), subresource...)
}

// applyRequest is a forced server-side apply with metacel's field manager, through the raw client.
func (w *Writer) applyRequest(path []string) *rest.Request {
	return w.raw.Patch(types.ApplyPatchType).AbsPath(path...).Param("fieldManager", FieldManager).Param("force", "true")
}

// sendRaw sends a write through the raw client and decodes the object it returns with decode.
func sendRaw[T any](ctx context.Context, req *rest.Request, obj map[string]any, decode func([]byte) (T, error)) (T, error) {
	var zero T
	data, err := jsonenc.Marshal(obj)
	if err != nil {
		return zero, fmt.Errorf("encode the object: %w", err)
	}
	res := req.Body(data).Do(ctx)
	if err := res.Error(); err != nil {
		return zero, err // with the API server's Status, when it sent one
	}
	body, err := res.Raw()
	if err != nil {
		return zero, err
	}
	got, err := decode(body)
	if err != nil {
		return zero, &responseError{err: err}
	}
	return got, nil
}

// responseError is a write the API server made, whose response cannot be read.
type responseError struct{ err error }

func (e *responseError) Error() string {
	return "written, but the API server's response cannot be read: " + e.err.Error()
}

func (e *responseError) Unwrap() error { return e.err }

func (w *Writer) resource(gvr schema.GroupVersionResource, namespace string) dynamic.ResourceInterface {
	if namespace == "" {
		return w.client.Resource(gvr)
	}
	return w.client.Resource(gvr).Namespace(namespace)
}

// Apply server-side applies a desired object, taking over conflicting fields: metacel owns what
// its policy sets, so a manual edit of such a field is reverted (drift correction). observed is
// the object as the cache holds it (nil: not known): when metacel created it and has not applied
// it since (CreatedNotApplied), its fields are first moved to metacel's Apply entry
// (UpgradeToApply), so that this apply owns them and removes any the policy no longer sets.
func (w *Writer) Apply(ctx context.Context, gvr schema.GroupVersionResource, obj, observed *unstructured.Unstructured) (*unstructured.Unstructured, error) {
	if observed != nil && CreatedNotApplied(observed) {
		if err := w.UpgradeToApply(ctx, gvr, observed); err != nil {
			return nil, fmt.Errorf("move the fields metacel created into its apply entry: %w", err)
		}
	}
	ctx, cancel := context.WithTimeout(ctx, RequestTimeout)
	defer cancel()
	if w.raw != nil {
		return sendRaw(ctx, w.applyRequest(path(gvr, obj.GetNamespace(), obj.GetName())), obj.Object, w.decode.Object)
	}
	return w.resource(gvr, obj.GetNamespace()).Apply(ctx, obj.GetName(), obj, metav1.ApplyOptions{FieldManager: FieldManager, Force: true})
}

// Create creates a child (POST) with metacel's field manager: unlike an apply, it fails
// (AlreadyExists) rather than take over an object of that name that metacel does not know, so a
// new child costs one request and no read. The child's fields are then in an Update entry, which
// Apply moves to an Apply entry (UpgradeToApply) before it first applies the child.
func (w *Writer) Create(ctx context.Context, gvr schema.GroupVersionResource, obj *unstructured.Unstructured) (*unstructured.Unstructured, error) {
	ctx, cancel := context.WithTimeout(ctx, RequestTimeout)
	defer cancel()
	if w.raw != nil {
		req := w.raw.Post().AbsPath(collection(gvr, obj.GetNamespace())...).Param("fieldManager", FieldManager).
			SetHeader("Content-Type", "application/json") // a body of bytes sets none
		return sendRaw(ctx, req, obj.Object, w.decode.Object)
	}
	return w.resource(gvr, obj.GetNamespace()).Create(ctx, obj, metav1.CreateOptions{FieldManager: FieldManager})
}

// UpgradeToApply moves what metacel set when it created an object into its Apply entry, so that
// its next apply owns those fields and removes any it no longer sets. obj is the object as cached.
// The move is one patch that turns metacel's Update entry into its Apply entry in place, guarded
// by obj's resourceVersion (upgradeInPlacePatch): no read. When obj is not the object as it is
// now, or metacel has more than that one entry, it falls back to client-go's csaupgrade on the
// object read live (caches hold other managers' entries without their fields, which its patch
// of the whole list would need).
func (w *Writer) UpgradeToApply(ctx context.Context, gvr schema.GroupVersionResource, obj *unstructured.Unstructured) error {
	ctx, cancel := context.WithTimeout(ctx, RequestTimeout)
	defer cancel()
	if patch, ok := upgradeInPlacePatch(obj); ok {
		_, err := w.resource(gvr, obj.GetNamespace()).Patch(ctx, obj.GetName(), types.JSONPatchType, patch, metav1.PatchOptions{FieldManager: FieldManager})
		if err == nil {
			return nil
		}
		// the cache was behind (the resourceVersion test failed), or the patch was refused:
		// the live object decides
		klog.FromContext(ctx).V(4).Info("Reading the object to upgrade its managed fields", "object", klog.KObj(obj), "err", err)
	}
	// the patch is guarded by the resourceVersion read: an object whose status moves on (a
	// Deployment's) is read again
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		live, err := w.resource(gvr, obj.GetNamespace()).Get(ctx, obj.GetName(), metav1.GetOptions{})
		if err != nil {
			return err
		}
		patch, err := csaupgrade.UpgradeManagedFieldsPatch(live, sets.New(FieldManager), FieldManager)
		if err != nil || patch == nil {
			return err
		}
		_, err = w.resource(gvr, obj.GetNamespace()).Patch(ctx, obj.GetName(), types.JSONPatchType, patch, metav1.PatchOptions{})
		return err
	})
}

// upgradeInPlacePatch is a JSON patch that turns metacel's one Update entry of obj's managed
// fields (its fields as it created obj) into its Apply entry, its fields unchanged: what csaupgrade
// makes of an object with no Apply entry of metacel's. It tests obj's resourceVersion, so that
// the index it names is the entry's in the object as stored, and the entry's manager and
// operation. ok is false unless metacel has exactly that one entry (not applied yet).
func upgradeInPlacePatch(obj *unstructured.Unstructured) (patch []byte, ok bool) {
	rv := obj.GetResourceVersion()
	index := -1
	for i, mf := range obj.GetManagedFields() {
		if mf.Manager != FieldManager {
			continue
		}
		if index >= 0 || mf.Operation != metav1.ManagedFieldsOperationUpdate || mf.Subresource != "" {
			return nil, false
		}
		index = i
	}
	if index < 0 || rv == "" {
		return nil, false
	}
	entry := fmt.Sprintf("/metadata/managedFields/%d", index)
	patch, err := json.Marshal([]map[string]string{
		{"op": "test", "path": "/metadata/resourceVersion", "value": rv},
		{"op": "test", "path": entry + "/manager", "value": FieldManager},
		{"op": "test", "path": entry + "/operation", "value": string(metav1.ManagedFieldsOperationUpdate)},
		{"op": "replace", "path": entry + "/operation", "value": string(metav1.ManagedFieldsOperationApply)},
	})
	return patch, err == nil
}

// Get reads an object from the API server, for the rare case where the cache cannot say (an
// object metacel does not manage).
func (w *Writer) Get(ctx context.Context, gvr schema.GroupVersionResource, namespace, name string) (*unstructured.Unstructured, error) {
	ctx, cancel := context.WithTimeout(ctx, RequestTimeout)
	defer cancel()
	return w.resource(gvr, namespace).Get(ctx, name, metav1.GetOptions{})
}

// DeletePropagation is how Delete deletes an object: the object goes at once, and the garbage
// collector deletes what it owns (a Deployment's ReplicaSets and Pods) after it, in the background.
// docs/contract.md says so.
const DeletePropagation = metav1.DeletePropagationBackground

// DeleteOption changes how Delete deletes an object.
type DeleteOption func(*metav1.DeleteOptions)

// Foreground deletes an object in the foreground: it stays, being deleted, until the garbage
// collector has deleted what it owns (a Job's Pods), so that it is gone only once they are.
func Foreground(o *metav1.DeleteOptions) {
	p := metav1.DeletePropagationForeground
	o.PropagationPolicy = &p
}

// Delete deletes an object if it is still the one observed (UID precondition), with
// DeletePropagation unless an option says otherwise. An object already gone is not an error.
func (w *Writer) Delete(ctx context.Context, gvr schema.GroupVersionResource, obj *unstructured.Unstructured, opts ...DeleteOption) error {
	ctx, cancel := context.WithTimeout(ctx, RequestTimeout)
	defer cancel()
	uid := obj.GetUID()
	propagation := DeletePropagation
	o := metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}, PropagationPolicy: &propagation}
	for _, opt := range opts {
		opt(&o)
	}
	err := w.resource(gvr, obj.GetNamespace()).Delete(ctx, obj.GetName(), o)
	if apierrors.IsNotFound(err) || apierrors.IsConflict(err) { // gone, or already replaced
		return nil
	}
	return err
}

// PatchMetadata patches an object's metadata (a JSON merge patch: a nil value removes a key) if
// it is still the one observed (its resourceVersion as a precondition: a conflict when it
// changed since), with metacel's field manager. It returns the object as the API server stored
// it.
func (w *Writer) PatchMetadata(ctx context.Context, gvr schema.GroupVersionResource, obj *unstructured.Unstructured, meta map[string]any) (*unstructured.Unstructured, error) {
	ctx, cancel := context.WithTimeout(ctx, RequestTimeout)
	defer cancel()
	patch, err := MetadataPatch(obj, meta)
	if err != nil {
		return nil, err
	}
	return w.resource(gvr, obj.GetNamespace()).Patch(ctx, obj.GetName(), types.MergePatchType, patch, metav1.PatchOptions{FieldManager: FieldManager})
}

// MetadataPatch is the JSON merge patch of obj's metadata that PatchMetadata sends: meta, with
// obj's resourceVersion as a precondition.
func MetadataPatch(obj *unstructured.Unstructured, meta map[string]any) ([]byte, error) {
	meta = maps.Clone(meta)
	meta["resourceVersion"] = obj.GetResourceVersion()
	return json.Marshal(map[string]any{"metadata": meta})
}

// Release lets go of a child that is no longer desired but must be kept (deletionPolicy: Orphan):
// it removes metacel's labels and annotations and the ownerReference to the parent, so that
// neither metacel nor the garbage collector touches it again.
func (w *Writer) Release(ctx context.Context, gvr schema.GroupVersionResource, obj *unstructured.Unstructured, labels, annotations []string, parentUID types.UID) error {
	patchLabels := map[string]any{}
	for _, l := range labels {
		patchLabels[l] = nil
	}
	var refs []any
	for _, r := range obj.GetOwnerReferences() {
		if r.UID != parentUID {
			refs = append(refs, map[string]any{"apiVersion": r.APIVersion, "kind": r.Kind, "name": r.Name, "uid": string(r.UID), "controller": r.Controller, "blockOwnerDeletion": r.BlockOwnerDeletion})
		}
	}
	patchAnnotations := map[string]any{}
	for _, a := range annotations {
		patchAnnotations[a] = nil
	}
	_, err := w.PatchMetadata(ctx, gvr, obj, map[string]any{"labels": patchLabels, "annotations": patchAnnotations, "ownerReferences": refs})
	if apierrors.IsNotFound(err) {
		return nil
	}
	return err
}

// ApplyStatus server-side applies the parent's status subresource. It returns the parent's
// metadata as the API server stored it (its resourceVersion after the write).
func (w *Writer) ApplyStatus(ctx context.Context, gvr schema.GroupVersionResource, parent *unstructured.Unstructured, status map[string]any) (*metav1.ObjectMeta, error) {
	ctx, cancel := context.WithTimeout(ctx, RequestTimeout)
	defer cancel()
	obj := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": parent.GetAPIVersion(),
		"kind":       parent.GetKind(),
		"metadata":   map[string]any{"name": parent.GetName(), "namespace": parent.GetNamespace()},
		"status":     status,
	}}
	if w.raw == nil {
		got, err := w.resource(gvr, parent.GetNamespace()).ApplyStatus(ctx, parent.GetName(), obj, metav1.ApplyOptions{FieldManager: FieldManager, Force: true})
		if err != nil {
			return nil, err
		}
		return metadataOf(got), nil
	}
	written, err := sendRaw(ctx, w.applyRequest(path(gvr, parent.GetNamespace(), parent.GetName(), "status")), obj.Object, w.decode.Metadata)
	var undecodable *responseError
	if errors.As(err, &undecodable) {
		return nil, nil // written; only its metadata is unknown
	}
	return written, err
}

// metadataOf copies an object's metadata but its managed fields.
func metadataOf(obj *unstructured.Unstructured) *metav1.ObjectMeta {
	return &metav1.ObjectMeta{
		Name: obj.GetName(), Namespace: obj.GetNamespace(), UID: obj.GetUID(), ResourceVersion: obj.GetResourceVersion(),
		Generation: obj.GetGeneration(), Labels: obj.GetLabels(), Annotations: obj.GetAnnotations(),
		OwnerReferences: obj.GetOwnerReferences(), Finalizers: obj.GetFinalizers(), DeletionTimestamp: obj.GetDeletionTimestamp(),
	}
}

// SetFinalizer adds (present) or removes a finalizer from an object, guarded by its
// resourceVersion so that a concurrent change is retried rather than overwritten. It returns the
// object's metadata as the API server stored it (its finalizers and resourceVersion after the
// patch).
func (w *Writer) SetFinalizer(ctx context.Context, gvr schema.GroupVersionResource, obj *unstructured.Unstructured, finalizer string, present bool) (*metav1.ObjectMeta, error) {
	var out []string
	for _, f := range obj.GetFinalizers() {
		if f != finalizer {
			out = append(out, f)
		}
	}
	if present {
		out = append(out, finalizer)
	}
	written, err := w.PatchMetadata(ctx, gvr, obj, map[string]any{"finalizers": out})
	if err != nil {
		return nil, fmt.Errorf("set finalizer %q: %w", finalizer, err)
	}
	return metadataOf(written), nil
}
