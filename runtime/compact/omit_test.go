package compact

import (
	"context"
	"slices"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

type fetchFunc func(ctx context.Context, namespace, name string) (*unstructured.Unstructured, error)

func (f fetchFunc) Fetch(ctx context.Context, namespace, name string) (*unstructured.Unstructured, error) {
	return f(ctx, namespace, name)
}

func TestOmittedObjectsAreReadFromTheAPIServer(t *testing.T) {
	big := strings.Repeat("x", 10_000)
	tests := []struct {
		name       string
		labels     map[string]string
		keptLabels []string
	}{
		{"small labels are kept whole", map[string]string{"app": "web", "metacel.dev/parent-uid": "u1"}, []string{"app", "metacel.dev/parent-uid"}},
		{"large labels keep metacel's only", map[string]string{"padding": big, "metacel.dev/parent-uid": "u1", "app.kubernetes.io/managed-by": "metacel"},
			[]string{"app.kubernetes.io/managed-by", "metacel.dev/parent-uid"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := NewObject(metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
				metav1.ObjectMeta{Name: "cm", Namespace: "ns", Labels: tt.labels},
				[]byte(`{"apiVersion":"v1","kind":"ConfigMap","data":{"k":"`+big+`"}}`))
			o.SetAnnotations(map[string]string{"a": big})
			asked := 0
			omitted := o.Omit(fetchFunc(func(_ context.Context, ns, name string) (*unstructured.Unstructured, error) {
				asked++
				return &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "ConfigMap",
					"metadata": map[string]any{"name": name, "namespace": ns}, "data": map[string]any{"k": "now"}}}, nil
			}))
			if omitted.Raw != nil || omitted.GetAnnotations() != nil || !omitted.fetches() {
				t.Errorf("the omitted object keeps its body (%d bytes) or annotations (%d)", len(omitted.Raw), len(omitted.GetAnnotations()))
			}
			var kept []string
			for k := range omitted.GetLabels() {
				kept = append(kept, k)
			}
			if strings.Join(slices.Sorted(slices.Values(kept)), ",") != strings.Join(tt.keptLabels, ",") {
				t.Errorf("kept labels %v, want %v", kept, tt.keptLabels)
			}
			u, err := Unstructured(omitted.DeepCopyObject())
			if err != nil {
				t.Fatal(err)
			}
			if got, _, _ := unstructured.NestedString(u.Object, "data", "k"); got != "now" || asked != 1 {
				t.Errorf("decoded data.k %q after %d reads, want the API server's %q after 1", got, asked, "now")
			}
			if o.Raw == nil || len(o.GetAnnotations()) != 1 {
				t.Error("Omit changed the object it was given")
			}
		})
	}
}

func TestAnObjectIsAsLargeAsItWasSentMetadataIncluded(t *testing.T) {
	big := strings.Repeat("x", 10_000)
	for _, tc := range []struct {
		name, json string
		larger     bool
	}{
		{"a large body", `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a"},"data":{"k":"` + big + `"}}`, true},
		{"large annotations, a small body", `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a","annotations":{"k":"` + big + `"}},"data":{}}`, true},
		{"large labels, a small body", `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a","labels":{"k":"` + big[:63] + `","l":"` + big[:63] + `"}}}`, false},
		{"small", `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a"},"data":{"k":"v"}}`, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o, err := Decode([]byte(tc.json))
			if err != nil {
				t.Fatal(err)
			}
			if got := o.Larger(5_000); got != tc.larger {
				t.Errorf("Larger(5000) = %v for %d bytes sent", got, len(tc.json))
			}
		})
	}
}
