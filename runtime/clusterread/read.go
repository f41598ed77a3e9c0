package clusterread

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/tools/pager"

	"metacel.dev/metacel/runtime/apply"
	"metacel.dev/metacel/runtime/contract"
	"metacel.dev/metacel/runtime/render"
)

// List lists the objects of a resource in a namespace ("": all) that selector selects, from the
// API server, page by page, each page's request bounded by apply.RequestTimeout: what plan,
// `metacel tree` and the CRD installer read of the cluster, and the runtime's decisions that must
// not trust a cache (removing a finalizer, pruning a dropped resource), with the client of the
// identity the policy acts as (apply.Writer.Client).
func List(ctx context.Context, client dynamic.Interface, gvr schema.GroupVersionResource, namespace, selector string) ([]*unstructured.Unstructured, error) {
	var out []*unstructured.Unstructured
	err := Each(ctx, client, gvr, namespace, selector, func(u *unstructured.Unstructured) error {
		out = append(out, u)
		return nil
	})
	return out, err
}

// Each calls do with each object List would return, page by page: what do does not keep is
// not held while the next pages are read (the parents out of a policy's selector may be most of
// a cluster's ConfigMaps).
func Each(ctx context.Context, client dynamic.Interface, gvr schema.GroupVersionResource, namespace, selector string, do func(*unstructured.Unstructured) error) error {
	p := pager.New(func(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
		ctx, cancel := context.WithTimeout(ctx, apply.RequestTimeout)
		defer cancel()
		return client.Resource(gvr).Namespace(namespace).List(ctx, opts)
	})
	err := p.EachListItemWithAlloc(ctx, metav1.ListOptions{LabelSelector: selector}, func(obj runtime.Object) error { // an item kept holds no page
		u, ok := obj.(*unstructured.Unstructured)
		if !ok {
			return fmt.Errorf("list %s: unexpected item %T", gvr.GroupResource(), obj)
		}
		return do(u)
	})
	if err != nil {
		return fmt.Errorf("list %s: %w", gvr.GroupResource(), err)
	}
	return nil
}

// ListChildren lists the children of a policy of a resource in all namespaces (those of one
// parent, when parentUID is set), page by page, whichever label names their policy
// (contract.ChildSelectors): each once, and only the policy's.
func ListChildren(ctx context.Context, client dynamic.Interface, gvr schema.GroupVersionResource, policy string, parentUID types.UID) ([]*unstructured.Unstructured, error) {
	var out []*unstructured.Unstructured
	seen := map[types.NamespacedName]bool{}
	for _, selector := range contract.ChildSelectors(policy, string(parentUID)) {
		objs, err := List(ctx, client, gvr, "", selector)
		if err != nil {
			return nil, err
		}
		for _, obj := range objs {
			key := types.NamespacedName{Namespace: obj.GetNamespace(), Name: obj.GetName()}
			if !seen[key] && contract.ChildPolicy(labels.Set(obj.GetLabels())) == policy {
				seen[key] = true
				out = append(out, obj)
			}
		}
	}
	return out, nil
}

// ReadRelated reads one related reference from the API server: the named object (none when it
// does not exist), or the objects its selector selects.
func ReadRelated(ctx context.Context, client dynamic.Interface, ref render.RelatedRef) ([]*unstructured.Unstructured, error) {
	if ref.Selector != nil {
		return List(ctx, client, ref.Resource, ref.Namespace, ref.Selector.String())
	}
	ctx, cancel := context.WithTimeout(ctx, apply.RequestTimeout)
	defer cancel()
	obj, err := client.Resource(ref.Resource).Namespace(ref.Namespace).Get(ctx, ref.Name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		return nil, nil
	case err != nil:
		return nil, err
	}
	return []*unstructured.Unstructured{obj}, nil
}
