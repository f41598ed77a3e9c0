package plan

import (
	"context"
	"fmt"
	"slices"
	"sync"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"metacel.dev/metacel/runtime/apply"
	"metacel.dev/metacel/runtime/clusterread"
	"metacel.dev/metacel/runtime/contract"
	"metacel.dev/metacel/runtime/conversion"
	"metacel.dev/metacel/runtime/policy"
	"metacel.dev/metacel/runtime/preview"
	"metacel.dev/metacel/runtime/render"
)

// world is the cluster's state as the runtime reads it for the policy: its parents, their
// children, and the related objects read so far.
type world struct {
	in      Input
	parents []*unstructured.Unstructured
	// children are the objects metacel applied for the policy, by their parent's UID
	children map[types.UID][]*unstructured.Unstructured
	// namespaces are every Namespace, read when a version's confinement asks for consent labels
	namespaces []*unstructured.Unstructured

	mu sync.Mutex
	// reads caches the related objects read, by request (namespaces and names repeat across
	// parents)
	reads map[string][]*unstructured.Unstructured
	// secrets are the Secret values read, to be kept out of the plan (redact.go)
	secrets secrets
	// converter converts the parents between the versions the candidate declares, built once per
	// plan; nil when it declares one
	converter *conversion.Converter
}

// readWorld lists the parents, the children of every child resource of both versions and of
// the ledger, and the Namespaces when a version needs their labels.
func readWorld(ctx context.Context, in Input) (*world, error) {
	w := &world{in: in, children: map[types.UID][]*unstructured.Unstructured{}, reads: map[string][]*unstructured.Unstructured{}}
	var err error
	if in.Candidate.Conversion != nil {
		if w.converter, err = conversion.New(in.Candidate.Conversion); err != nil {
			return nil, err
		}
	}
	if w.parents, err = listParents(ctx, in); err != nil {
		return nil, err
	}
	for _, gvr := range childResources(in) {
		if err := w.readChildren(ctx, gvr); err != nil {
			return nil, err
		}
	}
	if needsNamespaces(in.Candidate) || needsNamespaces(in.Running) {
		// read as the runtime reads them: with its own identity, not the policy's
		namespaces := in
		if in.Namespaces != nil {
			namespaces.Client = in.Namespaces
		}
		if w.namespaces, err = clusterread.List(ctx, namespaces.Client, schema.GroupVersionResource{Version: "v1", Resource: "namespaces"}, "", ""); err != nil {
			return nil, err
		}
	}
	return w, nil
}

// listParents lists the objects of the candidate's parent resource that its labelSelector
// selects, but those being deleted (the runtime finalizes them rather than sync them).
func listParents(ctx context.Context, in Input) ([]*unstructured.Unstructured, error) {
	c := in.Candidate
	selector := labels.Everything()
	if c.ParentSelector != nil {
		var err error
		if selector, err = metav1.LabelSelectorAsSelector(c.ParentSelector); err != nil {
			return nil, fmt.Errorf("policy %q: spec.parentResource.labelSelector: %w", c.Name(), err)
		}
	}
	all, err := clusterread.List(ctx, in.Client, listedVersion(in), "", selector.String())
	if err != nil {
		return nil, err
	}
	var out []*unstructured.Unstructured
	for _, p := range all {
		if p.GetDeletionTimestamp() == nil {
			out = append(out, p)
		}
	}
	sortParents(out)
	return out, nil
}

// childResources are the resources that may hold the policy's children: the candidate's, the
// running version's and the ledger's, one version of each.
func childResources(in Input) []schema.GroupVersionResource {
	seen := map[schema.GroupResource]bool{}
	var out []schema.GroupVersionResource
	add := func(gvr schema.GroupVersionResource) {
		if !seen[gvr.GroupResource()] {
			seen[gvr.GroupResource()] = true
			out = append(out, gvr)
		}
	}
	for _, c := range []*policy.Compiled{in.Candidate, in.Running} {
		if c != nil {
			for _, gvr := range sortedKeys(c.ChildResources) {
				add(gvr)
			}
		}
	}
	for _, gvr := range in.Recorded {
		add(gvr)
	}
	return out
}

// readChildren lists the policy's objects of a resource and keeps those metacel applied, by the
// UID of their parent. A resource the cluster no longer serves holds none.
func (w *world) readChildren(ctx context.Context, gvr schema.GroupVersionResource) error {
	objs, err := clusterread.ListChildren(ctx, w.in.Client, gvr, w.in.Candidate.Name(), "")
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	w.secrets.note(objs...)
	for _, obj := range objs {
		uid := types.UID(obj.GetLabels()[contract.LabelParentUID])
		if uid != "" && obj.GetLabels()[contract.LabelManagedBy] == contract.ManagedByValue && apply.AppliedBy(obj) {
			w.children[uid] = append(w.children[uid], obj)
		}
	}
	return nil
}

// needsNamespaces reports whether a version's confinement reads namespaces' consent labels.
func needsNamespaces(c *policy.Compiled) bool {
	return c != nil && len(c.Confinement.ConsentLabels()) > 0
}

// sync runs one offline sync of a parent under version c, with the related objects it reads and
// its observed children.
// sync syncs parent offline under c, which replaces previous (nil: none).
func (w *world) sync(ctx context.Context, c, previous *policy.Compiled, parent *unstructured.Unstructured) (*preview.Result, error) {
	related, err := w.related(ctx, c, parent)
	if err != nil {
		return nil, err
	}
	return preview.Run(ctx, preview.Input{Policy: c, Previous: previous, Parent: parent, Related: related, Observed: w.children[parent.GetUID()], Mapper: w.in.Mapper,
		ReservedNamespace: w.in.ReservedNamespace, CheckRecord: true})
}

// related reads the objects c's related entries name for parent, and the Namespaces when c
// needs their labels. An entry that does not resolve reads nothing: the sync reports it.
func (w *world) related(ctx context.Context, c *policy.Compiled, parent *unstructured.Unstructured) ([]*unstructured.Unstructured, error) {
	out := append([]*unstructured.Unstructured(nil), w.namespaces...) // with related entries or not
	if len(c.Related) == 0 {
		return out, nil
	}
	refs, err := render.Related(ctx, c, parent, nil)
	if err != nil {
		return out, nil //nolint:nilerr // the sync resolves the entries again and reports the error
	}
	for _, ref := range refs {
		objs, err := w.read(ctx, ref)
		if err != nil {
			return nil, fmt.Errorf("read related %q: %w", ref.ID, err)
		}
		out = append(out, objs...)
	}
	return out, nil
}

// read reads the objects of one related reference, once per distinct reference.
func (w *world) read(ctx context.Context, ref render.RelatedRef) ([]*unstructured.Unstructured, error) {
	key := fmt.Sprintf("%s|%s|%s|%v", ref.Resource, ref.Namespace, ref.Name, ref.Selector)
	w.mu.Lock()
	objs, ok := w.reads[key]
	w.mu.Unlock()
	if ok {
		return objs, nil
	}
	objs, err := clusterread.ReadRelated(ctx, w.in.Client, ref)
	if err != nil {
		return nil, err
	}
	w.secrets.note(objs...)
	w.mu.Lock()
	w.reads[key] = objs
	w.mu.Unlock()
	return objs, nil
}

// listedVersion is the resource to list the parents at: the candidate's version, unless the
// cluster does not serve it yet and the candidate converts from the running version's (a new
// version of the parent's API, which the runtime installs with the candidate).
func listedVersion(in Input) schema.GroupVersionResource {
	c, r := in.Candidate, in.Running
	if c.Conversion == nil || r == nil || r.Parent.GVR.GroupResource() != c.Parent.GVR.GroupResource() {
		return c.Parent.GVR
	}
	if slices.Contains(in.Mapper.Versions(c.Parent.GVR.GroupResource()), c.Parent.GVR.Version) {
		return c.Parent.GVR
	}
	return r.Parent.GVR
}

// atVersion returns a parent at the version policy c reads, converted with the candidate's
// conversion (as the runtime's webhook will convert it) when it was listed at another.
func (w *world) atVersion(ctx context.Context, c *policy.Compiled, parent *unstructured.Unstructured) (*unstructured.Unstructured, error) {
	want := c.Parent.GVR.GroupVersion().String()
	if parent.GetAPIVersion() == want || w.converter == nil {
		return parent, nil
	}
	return w.converter.Convert(ctx, parent, want)
}
