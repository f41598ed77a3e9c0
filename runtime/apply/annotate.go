package apply

import (
	"context"
	"encoding/json"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
)

// SetAnnotation sets one annotation of obj to value, with a merge patch of that key alone: the
// object's other annotations, and anyone else's writes to them meanwhile, are left as they are.
func (w *Writer) SetAnnotation(ctx context.Context, gvr schema.GroupVersionResource, obj *unstructured.Unstructured, key, value string) error {
	ctx, cancel := context.WithTimeout(ctx, RequestTimeout)
	defer cancel()
	if err := w.patchMetadata(ctx, gvr, obj, map[string]any{"annotations": map[string]string{key: value}}); err != nil {
		return fmt.Errorf("set annotation %q: %w", key, err)
	}
	return nil
}

// patchMetadata sends a JSON merge patch of obj's metadata, with metacel's field manager.
func (w *Writer) patchMetadata(ctx context.Context, gvr schema.GroupVersionResource, obj *unstructured.Unstructured, metadata map[string]any) error {
	patch, err := json.Marshal(map[string]any{"metadata": metadata})
	if err != nil {
		return err
	}
	_, err = w.resource(gvr, obj.GetNamespace()).Patch(ctx, obj.GetName(), types.MergePatchType, patch, metav1.PatchOptions{FieldManager: FieldManager})
	return err
}
