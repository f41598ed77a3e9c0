package kinds

import (
	"reflect"
	"sort"
	"strings"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/scheme"
)

// Info describes one resource.
type Info struct {
	GVR        schema.GroupVersionResource
	Kind       string
	Namespaced bool
	// Schema is the OpenAPI v3 schema of a custom resource's version, when known.
	Schema *apiextensionsv1.JSONSchemaProps
	// HasStatus is true for a custom resource with the status subresource, where metacel writes
	// the parent's status.
	HasStatus bool
	// Guessed is true when the resource was not known and its name and scope were guessed.
	Guessed bool
}

// GVK returns the group, version and kind of the resource's objects.
func (i Info) GVK() schema.GroupVersionKind { return i.GVR.GroupVersion().WithKind(i.Kind) }

// Mapper answers questions about resources; a Catalog offline, discovery in a cluster.
type Mapper interface {
	// ForResource returns the resource's Info; ok is false when the resource is unknown.
	ForResource(gvr schema.GroupVersionResource) (info Info, ok bool)
	// ForKind returns the Info of the resource holding objects of a kind; ok is false when unknown.
	ForKind(gvk schema.GroupVersionKind) (info Info, ok bool)
	// Versions returns the versions a resource is served in, sorted; none when it is unknown.
	Versions(gr schema.GroupResource) []string
}

// Catalog is an offline Mapper: built-in types plus added CRDs.
type Catalog struct {
	byGVR map[schema.GroupVersionResource]Info
	byGVK map[schema.GroupVersionKind]Info
	// crds are the custom resources added with AddCRD
	crds map[schema.GroupResource]bool
}

// NewCatalog returns a catalog of the built-in Kubernetes types that client-go knows and the API
// server serves (servedByDefault).
func NewCatalog() *Catalog {
	c := &Catalog{byGVR: map[schema.GroupVersionResource]Info{}, byGVK: map[schema.GroupVersionKind]Info{}, crds: map[schema.GroupResource]bool{}}
	known := scheme.Scheme.AllKnownTypes()
	stable := map[schema.GroupKind]bool{}
	for gvk := range known {
		if gvk.Version != "__internal" && !prerelease(gvk.Version) {
			stable[gvk.GroupKind()] = true
		}
	}
	for gvk, t := range known {
		if gvk.Version == "__internal" || !isObject(t) || !servedByDefault(gvk, stable) {
			continue
		}
		gvr, _ := meta.UnsafeGuessKindToResource(gvk)
		c.add(Info{GVR: gvr, Kind: gvk.Kind, Namespaced: !clusterScoped[gvk.Kind]})
	}
	return c
}

// servedByDefault reports whether the API server serves gvk, of the types client-go knows: not a
// pre-release version (alpha, beta) of a kind its group serves as a stable version too, nor
// anything of the group extensions, whose kinds moved to apps and networking.k8s.io. client-go
// still knows batch/v1beta1 CronJobs, policy/v1beta1 PodDisruptionBudgets and
// extensions/v1beta1 Ingresses, which Kubernetes removed (1.22 to 1.25), and the betas it added
// since 1.24 are off by default: offline, a policy naming one would pass, and every sync fail.
// stable holds the group and kinds client-go knows at a stable version.
func servedByDefault(gvk schema.GroupVersionKind, stable map[schema.GroupKind]bool) bool {
	return gvk.Group != "extensions" && (!prerelease(gvk.Version) || !stable[gvk.GroupKind()])
}

// prerelease reports whether a version is an alpha or a beta.
func prerelease(version string) bool {
	return strings.Contains(version, "alpha") || strings.Contains(version, "beta")
}

// isObject reports whether a Go type is a persisted object (it embeds ObjectMeta).
func isObject(t reflect.Type) bool {
	if t.Kind() != reflect.Struct {
		return false
	}
	_, ok := t.FieldByName("ObjectMeta")
	return ok && !strings.HasSuffix(t.Name(), "List")
}

// clusterScoped lists the built-in kinds that are not namespaced.
var clusterScoped = map[string]bool{
	"Namespace": true, "Node": true, "PersistentVolume": true, "ComponentStatus": true,
	"ClusterRole": true, "ClusterRoleBinding": true, "StorageClass": true, "CSIDriver": true,
	"CSINode": true, "VolumeAttachment": true, "VolumeAttributesClass": true, "PriorityClass": true,
	"ValidatingWebhookConfiguration": true, "MutatingWebhookConfiguration": true,
	"ValidatingAdmissionPolicy": true, "ValidatingAdmissionPolicyBinding": true,
	"MutatingAdmissionPolicy": true, "MutatingAdmissionPolicyBinding": true,
	"RuntimeClass": true, "IngressClass": true, "CertificateSigningRequest": true,
	"ClusterTrustBundle": true, "FlowSchema": true, "PriorityLevelConfiguration": true,
	"IPAddress": true, "ServiceCIDR": true, "DeviceClass": true, "ResourceSlice": true,
	"StorageVersionMigration": true, "CustomResourceDefinition": true, "APIService": true,
	"TokenReview": true, "SubjectAccessReview": true, "SelfSubjectAccessReview": true,
	"SelfSubjectRulesReview": true, "SelfSubjectReview": true, "StorageVersion": true,
}

func (c *Catalog) add(i Info) {
	c.byGVR[i.GVR] = i
	c.byGVK[i.GVK()] = i
}

// AddCRD adds every served version of a custom resource, with its schema.
func (c *Catalog) AddCRD(crd *apiextensionsv1.CustomResourceDefinition) {
	c.crds[schema.GroupResource{Group: crd.Spec.Group, Resource: crd.Spec.Names.Plural}] = true
	for _, v := range crd.Spec.Versions {
		if !v.Served {
			continue
		}
		i := Info{
			GVR:        schema.GroupVersionResource{Group: crd.Spec.Group, Version: v.Name, Resource: crd.Spec.Names.Plural},
			Kind:       crd.Spec.Names.Kind,
			Namespaced: crd.Spec.Scope == apiextensionsv1.NamespaceScoped,
		}
		if v.Schema != nil {
			i.Schema = v.Schema.OpenAPIV3Schema
		}
		i.HasStatus = v.Subresources != nil && v.Subresources.Status != nil
		c.add(i)
	}
}

// DefinedByCRD reports whether a resource was added with AddCRD, in any version.
func (c *Catalog) DefinedByCRD(gr schema.GroupResource) bool { return c.crds[gr] }

// CRDs returns the custom resources added with AddCRD, sorted.
func (c *Catalog) CRDs() []schema.GroupResource {
	out := make([]schema.GroupResource, 0, len(c.crds))
	for gr := range c.crds {
		out = append(out, gr)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].String() < out[j].String() })
	return out
}

// ForResource implements Mapper.
func (c *Catalog) ForResource(gvr schema.GroupVersionResource) (Info, bool) {
	i, ok := c.byGVR[gvr]
	return i, ok
}

// Versions implements Mapper.
func (c *Catalog) Versions(gr schema.GroupResource) []string {
	var out []string
	for gvr := range c.byGVR {
		if gvr.GroupResource() == gr {
			out = append(out, gvr.Version)
		}
	}
	sort.Strings(out)
	return out
}

// ForKind implements Mapper.
func (c *Catalog) ForKind(gvk schema.GroupVersionKind) (Info, bool) {
	i, ok := c.byGVK[gvk]
	return i, ok
}

// LookupKind returns what m knows of a kind, or a guess: the plural kubectl would guess, namespaced.
func LookupKind(m Mapper, gvk schema.GroupVersionKind) Info {
	if i, ok := m.ForKind(gvk); ok {
		return i
	}
	gvr, _ := meta.UnsafeGuessKindToResource(gvk)
	return Info{GVR: gvr, Kind: gvk.Kind, Namespaced: true, Guessed: true}
}

// LookupResource returns what m knows of a resource, or a guess with no kind, namespaced.
func LookupResource(m Mapper, gvr schema.GroupVersionResource) Info {
	if i, ok := m.ForResource(gvr); ok {
		return i
	}
	return Info{GVR: gvr, Namespaced: true, Guessed: true}
}
