package kinds

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"sync"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/restmapper"
)

// requestTimeout bounds each request Discovery makes.
const requestTimeout = 30 * time.Second

var crdResource = apiextensionsv1.SchemeGroupVersion.WithResource("customresourcedefinitions")

// Discovery is the Mapper of a cluster: discovery for kinds and scopes, CRDs for schemas. It
// caches what it learns; Reset forgets it, so that a resource created later (a new CRD) is found.
//
// The API server drops a deleted CRD's resources from discovery a moment after the CRD is gone;
// a policy loaded again in that moment would run on a resource nobody serves. So the CRDs seen
// deleted (CRDDeleted) and not seen again since (CRDPresent) are not served, whatever discovery
// still says.
type Discovery struct {
	mapper  *restmapper.DeferredDiscoveryRESTMapper
	dynamic dynamic.Interface
	mu      sync.Mutex
	// crds caches what CRDs say of custom resources, by resource
	crds map[schema.GroupVersionResource]crdVersion
	// deleted names the CRDs (resource.group) seen deleted and not seen since
	deleted map[string]bool
}

// crdVersion is what metacel reads of one version of a CRD.
type crdVersion struct {
	schema    *apiextensionsv1.JSONSchemaProps
	hasStatus bool
}

// NewDiscovery returns a cluster Mapper.
func NewDiscovery(dc discovery.DiscoveryInterface, dyn dynamic.Interface) *Discovery {
	return &Discovery{
		mapper:  restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(dc)),
		dynamic: dyn,
		crds:    map[schema.GroupVersionResource]crdVersion{},
		deleted: map[string]bool{},
	}
}

// CRDDeleted records that the CRD name (resource.group) is gone: its resources are not served
// from now on, until CRDPresent says it is back.
func (d *Discovery) CRDDeleted(name string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.deleted[name] = true
}

// CRDPresent records that the CRD name exists (again).
func (d *Discovery) CRDPresent(name string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	delete(d.deleted, name)
}

// isDeleted reports whether a resource is served by a CRD seen deleted.
func (d *Discovery) isDeleted(gr schema.GroupResource) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	return gr.Group != "" && d.deleted[gr.String()]
}

// Reset forgets what discovery said.
func (d *Discovery) Reset() {
	d.mapper.Reset()
	d.mu.Lock()
	d.crds = map[schema.GroupVersionResource]crdVersion{}
	d.mu.Unlock()
}

// ForResource implements Mapper; for a custom resource, Info.Schema is its CRD's schema.
func (d *Discovery) ForResource(gvr schema.GroupVersionResource) (Info, bool) {
	if d.isDeleted(gvr.GroupResource()) {
		return Info{}, false
	}
	gvk, err := d.mapper.KindFor(gvr)
	if err != nil {
		return Info{}, false
	}
	info, ok := d.ForKind(gvk)
	if ok {
		v := d.crd(gvr)
		info.Schema, info.HasStatus = v.schema, v.hasStatus
	}
	return info, ok
}

// Versions implements Mapper.
func (d *Discovery) Versions(gr schema.GroupResource) []string {
	if d.isDeleted(gr) {
		return nil
	}
	gvrs, err := d.mapper.ResourcesFor(gr.WithVersion(""))
	if err != nil {
		return nil
	}
	out := make([]string, 0, len(gvrs))
	for _, gvr := range gvrs {
		out = append(out, gvr.Version)
	}
	sort.Strings(out)
	return slices.Compact(out)
}

// ForKind implements Mapper.
func (d *Discovery) ForKind(gvk schema.GroupVersionKind) (Info, bool) {
	m, err := d.mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	if err != nil || d.isDeleted(m.Resource.GroupResource()) {
		return Info{}, false
	}
	return Info{GVR: m.Resource, Kind: gvk.Kind, Namespaced: m.Scope.Name() == meta.RESTScopeNameNamespace}, true
}

// crd returns what the CRD of a custom resource says of its version; nothing for built-ins.
func (d *Discovery) crd(gvr schema.GroupVersionResource) crdVersion {
	d.mu.Lock()
	defer d.mu.Unlock()
	if v, ok := d.crds[gvr]; ok {
		return v
	}
	v, err := d.fetchCRD(gvr)
	if err != nil {
		return crdVersion{} // not a CRD (a built-in or an aggregated API): untyped
	}
	d.crds[gvr] = v
	return v
}

func (d *Discovery) fetchCRD(gvr schema.GroupVersionResource) (crdVersion, error) {
	if gvr.Group == "" || d.dynamic == nil {
		return crdVersion{}, fmt.Errorf("not a custom resource")
	}
	// under d.mu: bounded, so that an API server that does not answer blocks no load for ever
	ctx, cancel := context.WithTimeout(context.Background(), requestTimeout)
	defer cancel()
	u, err := d.dynamic.Resource(crdResource).Get(ctx, gvr.Resource+"."+gvr.Group, metav1.GetOptions{})
	if err != nil {
		return crdVersion{}, err
	}
	crd := &apiextensionsv1.CustomResourceDefinition{}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, crd); err != nil {
		return crdVersion{}, err
	}
	for _, v := range crd.Spec.Versions {
		if v.Name == gvr.Version {
			out := crdVersion{hasStatus: v.Subresources != nil && v.Subresources.Status != nil}
			if v.Schema != nil {
				out.schema = v.Schema.OpenAPIV3Schema
			}
			return out, nil
		}
	}
	return crdVersion{}, fmt.Errorf("no version %s in CRD", gvr.Version)
}
