package plan

import (
	"context"
	"fmt"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"

	"metacel.dev/metacel/runtime/apply"
	"metacel.dev/metacel/runtime/contract"
	"metacel.dev/metacel/runtime/decide"
)

// dryRunAll is the dryRun value that has the API server run every stage of a write but storage.
var dryRunAll = []string{metav1.DryRunAll}

// dryRun sends every write of changes as a dry run, in order, records each refusal on its change,
// and returns them all as the parent's error ("" when the API server accepts every write).
func dryRun(ctx context.Context, client dynamic.Interface, parent *unstructured.Unstructured, changes []Change) string {
	var errs []string
	for i := range changes {
		c := &changes[i]
		if c.desired == nil && c.patch == nil {
			continue // a deletion or release: no object to check
		}
		if err := sendDryRun(ctx, client, parent, c); err != nil {
			c.DryRunError = err.Error()
			errs = append(errs, fmt.Sprintf("dry run of %s: %v", c, err))
		}
	}
	return strings.Join(errs, "; ")
}

// sendDryRun sends one write as the runtime would send it, as a dry run: a create (POST) for a
// new child, a forced server-side apply for an update, and for a recreation a create under a
// name the API server generates from the child's (its own is taken until the runtime deletes it).
func sendDryRun(ctx context.Context, client dynamic.Interface, parent *unstructured.Unstructured, c *Change) error {
	ctx, cancel := context.WithTimeout(ctx, apply.RequestTimeout)
	defer cancel()
	if c.Action == decide.UpdateBookkeeping {
		return dryPatch(ctx, client.Resource(c.gvr).Namespace(c.observed.GetNamespace()), c.observed, c.patch)
	}
	res := client.Resource(c.gvr).Namespace(c.desired.GetNamespace())
	switch c.Action {
	case decide.Create:
		_, err := res.Create(ctx, c.desired, metav1.CreateOptions{DryRun: dryRunAll, FieldManager: apply.FieldManager})
		if apierrors.IsAlreadyExists(err) {
			return takeExisting(ctx, res, parent, c)
		}
		return err
	case decide.Recreate:
		obj := c.desired.DeepCopy()
		obj.SetGenerateName(obj.GetName())
		obj.SetName("")
		_, err := res.Create(ctx, obj, metav1.CreateOptions{DryRun: dryRunAll, FieldManager: apply.FieldManager})
		return err
	case decide.Update:
		return dryApply(ctx, res, c.desired)
	}
	return nil
}

// takeExisting decides, as the runtime does, about an object that holds a new child's name: one
// metacel applied for this parent is applied (dry run), anyone else's is a conflict.
func takeExisting(ctx context.Context, res dynamic.ResourceInterface, parent *unstructured.Unstructured, c *Change) error {
	existing, err := res.Get(ctx, c.desired.GetName(), metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		return nil // gone meanwhile: the create would pass
	case err != nil:
		return fmt.Errorf("read the object of its name: %w", err)
	case !apply.AppliedBy(existing) || existing.GetLabels()[contract.LabelParentUID] != string(parent.GetUID()):
		return fmt.Errorf("ChildConflict: %s already exists and is not managed by this %s (metacel did not apply it, or applied it for another parent)",
			describe(existing), parent.GetKind())
	}
	return dryApply(ctx, res, c.desired)
}

// dryApply is the runtime's update (a forced server-side apply with metacel's field manager),
// as a dry run.
func dryApply(ctx context.Context, res dynamic.ResourceInterface, obj *unstructured.Unstructured) error {
	_, err := res.Apply(ctx, obj.GetName(), obj, metav1.ApplyOptions{DryRun: dryRunAll, Force: true, FieldManager: apply.FieldManager})
	return err
}

// dryPatch sends the patch of a child's bookkeeping as the runtime sends it (apply.Writer.PatchMetadata), as a dry run.
func dryPatch(ctx context.Context, res dynamic.ResourceInterface, observed *unstructured.Unstructured, meta map[string]any) error {
	patch, err := apply.MetadataPatch(observed, meta)
	if err != nil {
		return err
	}
	_, err = res.Patch(ctx, observed.GetName(), types.MergePatchType, patch, metav1.PatchOptions{DryRun: dryRunAll, FieldManager: apply.FieldManager})
	return err
}
