package v1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// MyAppSpec defines the desired state of MyApp.
type MyAppSpec struct {
	// Image is the container image of the application's Pod.
	// +optional
	Image string `json:"image,omitempty"`
	// Banner is optional banner text for the application.
	// +optional
	Banner string `json:"banner,omitempty"`
}

// MyAppStatus defines the observed state of MyApp.
type MyAppStatus struct {
	// PodName is the name of the MyApp's Pod (the benchmark's CRD adds it, as the hand-written
	// controller and metacel's bench policy write it).
	// +optional
	PodName string `json:"podName,omitempty"`

	// conditions represent the current state of the MyApp resource (Kubebuilder scaffolds them).
	// +listType=map
	// +listMapKey=type
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// +kubebuilder:object:root=true
// +kubebuilder:subresource:status

// MyApp is the Schema for the myapps API.
type MyApp struct {
	metav1.TypeMeta `json:",inline"`

	// metadata is a standard object metadata
	// +optional
	metav1.ObjectMeta `json:"metadata,omitzero"`

	// spec defines the desired state of MyApp
	// +required
	Spec MyAppSpec `json:"spec"`

	// status defines the observed state of MyApp
	// +optional
	Status MyAppStatus `json:"status,omitzero"`
}

// +kubebuilder:object:root=true

// MyAppList contains a list of MyApp.
type MyAppList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitzero"`
	Items           []MyApp `json:"items"`
}
