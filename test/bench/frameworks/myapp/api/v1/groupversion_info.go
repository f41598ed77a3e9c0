// Package v1 contains API Schema definitions for the demo v1 API group: the Kopf tutorial's MyApp,
// as Kubebuilder scaffolds an API (`kubebuilder create api --group demo --version v1 --kind MyApp`).
// +kubebuilder:object:generate=true
// +groupName=demo.rtfm.co.ua
package v1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

var (
	// GroupVersion is group version used to register these objects.
	GroupVersion = schema.GroupVersion{Group: "demo.rtfm.co.ua", Version: "v1"}

	// SchemeBuilder is used to add go types to the GroupVersionKind scheme.
	SchemeBuilder = runtime.NewSchemeBuilder(addKnownTypes)

	// AddToScheme adds the types in this group-version to the given scheme.
	AddToScheme = SchemeBuilder.AddToScheme
)

// addKnownTypes adds the list of known types to the scheme.
func addKnownTypes(scheme *runtime.Scheme) error {
	scheme.AddKnownTypes(GroupVersion, &MyApp{}, &MyAppList{})
	metav1.AddToGroupVersion(scheme, GroupVersion)
	return nil
}
