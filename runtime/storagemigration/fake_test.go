package storagemigration

import (
	"context"
	"slices"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/fake"
	k8stesting "k8s.io/client-go/testing"
)

const crdName = "widgets.example.com"

var widgets = schema.GroupVersionResource{Group: "example.com", Version: "v1", Resource: "widgets"}

// crd is the CRD of widgets, with versions v1alpha1 and v1 (storage names which is storage).
func crd(storage string, generation int64, stored []string, annotations map[string]string) *unstructured.Unstructured {
	versions := []any{}
	for _, v := range []string{"v1alpha1", "v1"} {
		versions = append(versions, map[string]any{"name": v, "served": true, "storage": v == storage})
	}
	storedAny := []any{}
	for _, v := range stored {
		storedAny = append(storedAny, v)
	}
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "apiextensions.k8s.io/v1",
		"kind":       "CustomResourceDefinition",
		"metadata":   map[string]any{"name": crdName, "generation": generation, "resourceVersion": "1"},
		"spec": map[string]any{
			"group":    "example.com",
			"scope":    "Namespaced",
			"names":    map[string]any{"plural": "widgets", "kind": "Widget"},
			"versions": versions,
		},
		"status": map[string]any{"storedVersions": storedAny},
	}}
	if annotations != nil {
		u.SetAnnotations(annotations)
	}
	return u
}

func widget(key string) *unstructured.Unstructured {
	ns, name, _ := strings.Cut(key, "/")
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "example.com/v1",
		"kind":       "Widget",
		"metadata":   map[string]any{"namespace": ns, "name": name, "resourceVersion": "7"},
		"spec":       map[string]any{"replicas": int64(1)},
	}}
}

// widgetKeys are seven widgets in three namespaces; "a-b" lists before "a" (byte order of the
// storage key: '-' < '/').
var widgetKeys = []string{"a-b/w1", "a/w1", "a/w2", "b/w1", "b/w2", "b/w3", "c/w1"}

func newFake(objs ...runtime.Object) *fake.FakeDynamicClient {
	return fake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), map[schema.GroupVersionResource]string{
		widgets:     "WidgetList",
		CRDResource: "CustomResourceDefinitionList",
		SVMResource: "StorageVersionMigrationList",
	}, objs...)
}

// paged is a dynamic client whose lists of widgets are paged by Limit and Continue, as the API
// server's are (the fake's ignore both): in key order, the continue token the last key of the
// page. A token in expire is refused once, expired.
type paged struct {
	*fake.FakeDynamicClient
	expire map[string]bool
	lists  []metav1.ListOptions
}

func (p *paged) Resource(gvr schema.GroupVersionResource) dynamic.NamespaceableResourceInterface {
	r := p.FakeDynamicClient.Resource(gvr)
	if gvr != widgets {
		return r
	}
	return pagedResource{NamespaceableResourceInterface: r, p: p}
}

type pagedResource struct {
	dynamic.NamespaceableResourceInterface
	p *paged
}

func (r pagedResource) List(ctx context.Context, opts metav1.ListOptions) (*unstructured.UnstructuredList, error) {
	r.p.lists = append(r.p.lists, opts)
	if r.p.expire[opts.Continue] {
		delete(r.p.expire, opts.Continue)
		return nil, apierrors.NewResourceExpired("the provided continue parameter is too old")
	}
	all, err := r.NamespaceableResourceInterface.List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	items := all.Items
	slices.SortFunc(items, func(a, b unstructured.Unstructured) int { return strings.Compare(keyOf(&a), keyOf(&b)) })
	start := 0
	if opts.Continue != "" {
		start = slices.IndexFunc(items, func(u unstructured.Unstructured) bool { return keyOf(&u) > opts.Continue })
		if start < 0 {
			start = len(items)
		}
	}
	end := len(items)
	if opts.Limit > 0 && start+int(opts.Limit) < end {
		end = start + int(opts.Limit)
	}
	page := &unstructured.UnstructuredList{Object: map[string]any{"apiVersion": "example.com/v1", "kind": "WidgetList"}, Items: items[start:end]}
	if end < len(items) {
		page.SetContinue(keyOf(&items[end-1]))
	}
	return page, nil
}

// writes is the keys (namespace/name, or name) of the objects of a resource that the client
// was asked to write with verb (update, patch, create, delete) on subresource, in order.
func writes(client *fake.FakeDynamicClient, verb string, gvr schema.GroupVersionResource, subresource string) []string {
	var keys []string
	for _, a := range client.Actions() {
		if a.GetVerb() != verb || a.GetResource() != gvr || a.GetSubresource() != subresource {
			continue
		}
		switch a := a.(type) {
		case interface{ GetObject() runtime.Object }: // an update or a create
			keys = append(keys, keyOf(a.GetObject().(*unstructured.Unstructured)))
		case k8stesting.PatchAction:
			keys = append(keys, a.GetName())
		case k8stesting.DeleteAction:
			keys = append(keys, a.GetName())
		}
	}
	return keys
}

// allWrites counts every write the client was asked for.
func allWrites(client *fake.FakeDynamicClient) int {
	n := 0
	for _, a := range client.Actions() {
		switch a.GetVerb() {
		case "get", "list", "watch":
		default:
			n++
		}
	}
	return n
}

func readCRD(t *testing.T, client dynamic.Interface) *unstructured.Unstructured {
	t.Helper()
	u, err := client.Resource(CRDResource).Get(context.Background(), crdName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return u
}
