package storagemigration

import (
	"context"
	"encoding/json"
	"fmt"

	"metacel.dev/metacel/runtime/contract"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"

	"metacel.dev/metacel/runtime/apply"
)

// Annotation is, on a CRD whose stored objects Migrate is rewriting, how far it got: JSON of the
// storage version and CRD generation the rewrite is for and the key (namespace/name, or name) of
// the last object of the last page done, {"storageVersion":"v1","generation":3,"after":"ns/name"}.
// Migrate writes it after each page and removes it once status.storedVersions is trimmed; a
// Migrate after a restart resumes after that key, unless the CRD's storage version or generation
// is another by then.
const Annotation = contract.AnnotationStorageMigration

// progress is the content of Annotation.
type progress struct {
	StorageVersion string `json:"storageVersion"`
	Generation     int64  `json:"generation"`
	After          string `json:"after"`
}

// resumeAfter is the key after which the rewrite resumes: the one the CRD's annotation records
// for this migration, else "" (from the start).
func resumeAfter(ctx context.Context, crd *unstructured.Unstructured, t target) string {
	raw, ok := crd.GetAnnotations()[Annotation]
	if !ok {
		return ""
	}
	logger := klog.FromContext(ctx)
	var p progress
	if err := json.Unmarshal([]byte(raw), &p); err != nil {
		logger.Info("Ignoring an unreadable storage migration progress; rewriting from the start", "annotation", Annotation, "err", err)
		return ""
	}
	if p.StorageVersion != t.storageVersion() || p.Generation != t.generation {
		logger.Info("The recorded storage migration progress is for another version of the CRD; rewriting from the start",
			"recordedStorageVersion", p.StorageVersion, "recordedGeneration", p.Generation, "generation", t.generation)
		return ""
	}
	logger.Info("Resuming the rewrite of stored objects", "after", p.After)
	return p.After
}

// rewriteAll rewrites, page by page in the order the API server lists them (by key), the objects
// of the resource whose key is after after, and records the progress after each page but the last.
// A continue token that expired lists again from the start, past what is done.
func (m *Migrator) rewriteAll(ctx context.Context, t target, after string) (Result, error) {
	var res Result
	recorded := after
	opts := metav1.ListOptions{Limit: m.pageSize()}
	for {
		list, err := m.listPage(ctx, t, opts)
		if opts.Continue != "" && (apierrors.IsResourceExpired(err) || apierrors.IsGone(err)) {
			klog.FromContext(ctx).V(2).Info("The list's continue token expired; listing again from the start", "after", after)
			opts.Continue = ""
			continue
		}
		if err != nil {
			return res, fmt.Errorf("list %s of CRD %q: %w", t.resource.GroupResource(), t.crd, err)
		}
		for i := range list.Items {
			obj := &list.Items[i]
			key := keyOf(obj)
			if key <= after {
				continue
			}
			rewritten, err := m.rewrite(ctx, t, obj)
			if err != nil {
				return res, err
			}
			if rewritten {
				res.Rewritten++
			} else {
				res.Skipped++
			}
			after = key
		}
		opts.Continue = list.GetContinue()
		if opts.Continue == "" {
			return res, nil
		}
		if after != recorded {
			if err := m.recordProgress(ctx, t, after); err != nil {
				return res, err
			}
			recorded = after
		}
	}
}

func (m *Migrator) listPage(ctx context.Context, t target, opts metav1.ListOptions) (*unstructured.UnstructuredList, error) {
	ctx, cancel := context.WithTimeout(ctx, apply.RequestTimeout)
	defer cancel()
	return m.Dynamic.Resource(t.resource).List(ctx, opts)
}

// rewrite updates obj exactly as listed, its resourceVersion included, so that the API server
// stores it again, at the storage version. It reports false for an object written (Conflict) or
// deleted (NotFound) since it was listed: that write stored it at the storage version too.
func (m *Migrator) rewrite(ctx context.Context, t target, obj *unstructured.Unstructured) (bool, error) {
	reqCtx, cancel := context.WithTimeout(ctx, apply.RequestTimeout)
	defer cancel()
	_, err := m.Dynamic.Resource(t.resource).Namespace(obj.GetNamespace()).Update(reqCtx, obj, metav1.UpdateOptions{FieldManager: m.FieldManager})
	switch {
	case err == nil:
		return true, nil
	case apierrors.IsConflict(err) || apierrors.IsNotFound(err):
		klog.FromContext(ctx).V(4).Info("Object written or deleted since listed; skipped", "object", klog.KObj(obj), "reason", apierrors.ReasonForError(err))
		return false, nil
	}
	return false, fmt.Errorf("rewrite %s %q of CRD %q: %w", t.resource.GroupResource(), keyOf(obj), t.crd, err)
}

// recordProgress records on the CRD that the objects up to the key after are rewritten.
func (m *Migrator) recordProgress(ctx context.Context, t target, after string) error {
	value, err := json.Marshal(progress{StorageVersion: t.storageVersion(), Generation: t.generation, After: after})
	if err != nil {
		return fmt.Errorf("record the storage migration progress of CRD %q: %w", t.crd, err)
	}
	if err := m.patchAnnotation(ctx, t.crd, string(value)); err != nil {
		return fmt.Errorf("record the storage migration progress of CRD %q: %w", t.crd, err)
	}
	klog.FromContext(ctx).V(2).Info("Recorded the storage migration progress", "after", after)
	return nil
}

// forgetProgress removes the progress annotation from the CRD, if it has one.
func (m *Migrator) forgetProgress(ctx context.Context, crd *unstructured.Unstructured) error {
	if _, ok := crd.GetAnnotations()[Annotation]; !ok {
		return nil
	}
	if err := m.patchAnnotation(ctx, crd.GetName(), nil); err != nil {
		return fmt.Errorf("remove the storage migration progress of CRD %q: %w", crd.GetName(), err)
	}
	return nil
}

// patchAnnotation sets the annotation on the CRD to value (nil: removes it) with a JSON merge
// patch, which changes no other field.
func (m *Migrator) patchAnnotation(ctx context.Context, crdName string, value any) error {
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": map[string]any{Annotation: value}}})
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, apply.RequestTimeout)
	defer cancel()
	_, err = m.Dynamic.Resource(CRDResource).Patch(ctx, crdName, types.MergePatchType, patch, metav1.PatchOptions{FieldManager: m.FieldManager})
	return err
}

func (m *Migrator) pageSize() int64 {
	if m.PageSize > 0 {
		return m.PageSize
	}
	return DefaultPageSize
}

// keyOf is the object's key in the order the API server lists in: namespace/name, or name for a
// cluster-scoped object. The API server lists by its storage key, which ends in these, so that
// the keys of a list come in increasing byte order.
func keyOf(obj *unstructured.Unstructured) string {
	if ns := obj.GetNamespace(); ns != "" {
		return ns + "/" + obj.GetName()
	}
	return obj.GetName()
}
