package apivalidation

import (
	"fmt"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/validate/content"
	genericvalidation "k8s.io/apimachinery/pkg/api/validation"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/kubernetes/pkg/api/legacyscheme"
	_ "k8s.io/kubernetes/pkg/apis/apps/install"        // apps/v1 into the scheme, with its defaults and conversions
	_ "k8s.io/kubernetes/pkg/apis/autoscaling/install" // autoscaling/v1, v2
	_ "k8s.io/kubernetes/pkg/apis/batch/install"       // batch/v1
	_ "k8s.io/kubernetes/pkg/apis/core/install"        // v1
	_ "k8s.io/kubernetes/pkg/apis/networking/install"  // networking.k8s.io/v1
	_ "k8s.io/kubernetes/pkg/apis/policy/install"      // policy/v1
	_ "k8s.io/kubernetes/pkg/apis/rbac/install"        // rbac.authorization.k8s.io/v1
)

// placeholderNamespace stands for the namespace of the request when a namespaced object has none:
// the API server takes the namespace from the request's path.
const placeholderNamespace = "default"

// placeholderUID stands for the uid the API server gives a new object (a Job's generated selector
// holds it).
const placeholderUID = "00000000-0000-0000-0000-000000000000"

// Knows reports whether Validate validates objects of the kind and version.
func Knows(gvk schema.GroupVersionKind) bool {
	_, ok := builtinKinds[gvk.GroupKind()]
	return ok && legacyscheme.Scheme.Recognizes(gvk)
}

// Validate validates a new object of a built-in kind as the API server validates a create: the
// object is decoded into its versioned type, defaulted, converted to the internal type and
// checked by the validation of its API group, then its metadata by the generic checks. It returns
// the API server's field errors, or nil for a valid object and for a kind it does not know
// (Knows). The object is not modified.
//
// A namespaced object without a namespace is checked as if in the request's namespace; its status
// is not checked (a create does not write it).
func Validate(obj *unstructured.Unstructured) field.ErrorList {
	gvk := obj.GroupVersionKind()
	k, ok := builtinKinds[gvk.GroupKind()]
	if !ok || !legacyscheme.Scheme.Recognizes(gvk) {
		return nil
	}
	internal, err := toInternal(obj, gvk, k.namespaced)
	if err != nil {
		return field.ErrorList{field.TypeInvalid(field.NewPath("<body>"), field.OmitValueType{}, err.Error())}
	}
	if k.prepare != nil {
		k.prepare(internal)
	}
	if errs := k.validate(internal); len(errs) > 0 {
		return errs
	}
	// as rest.BeforeCreate: the generic checks of the metadata, after the kind's own
	accessor, err := meta.Accessor(internal)
	if err != nil {
		return field.ErrorList{field.InternalError(nil, err)}
	}
	return genericvalidation.ValidateObjectMetaAccessor(accessor, k.namespaced, validatePathSegment, field.NewPath("metadata"))
}

// validatePathSegment is rest.BeforeCreate's check of a name: one the request's path can hold.
func validatePathSegment(name string, prefix bool) []string {
	if prefix {
		return content.IsPathSegmentPrefix(name)
	}
	return content.IsPathSegmentName(name)
}

// toInternal decodes the object as the API server decodes a request's body: into the versioned
// type, defaulted, then converted to the internal type its validation reads.
func toInternal(obj *unstructured.Unstructured, gvk schema.GroupVersionKind, namespaced bool) (runtime.Object, error) {
	content := withoutStatus(obj.UnstructuredContent())
	versioned, err := legacyscheme.Scheme.New(gvk)
	if err != nil {
		return nil, err
	}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(content, versioned); err != nil {
		return nil, fmt.Errorf("cannot be handled as a %s: %w", gvk.Kind, err)
	}
	accessor, err := meta.Accessor(versioned)
	if err != nil {
		return nil, err
	}
	if namespaced && accessor.GetNamespace() == "" {
		accessor.SetNamespace(placeholderNamespace)
	}
	accessor.SetUID(placeholderUID)
	legacyscheme.Scheme.Default(versioned)
	internal, err := legacyscheme.Scheme.UnsafeConvertToVersion(versioned, runtime.InternalGroupVersioner) // versioned is this call's own
	if err != nil {
		return nil, fmt.Errorf("converting %s: %w", gvk.Kind, err)
	}
	return internal, nil
}

// withoutStatus returns the object's content without its status, which a create does not write
// (every strategy's PrepareForCreate clears it).
func withoutStatus(content map[string]any) map[string]any {
	if _, ok := content["status"]; !ok {
		return content
	}
	out := make(map[string]any, len(content))
	for k, v := range content {
		if k != "status" {
			out[k] = v
		}
	}
	return out
}
