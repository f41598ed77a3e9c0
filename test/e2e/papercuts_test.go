//go:build e2e

package e2e

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"metacel.dev/metacel/runtime/operator"
)

func TestALabelledConfigMapWithoutAPolicyIsReported(t *testing.T) {
	policyNS := newNamespace(t, "policies")
	startRuntimeWith(t, operator.Options{PolicyNamespace: policyNS})
	labelled := metav1.ObjectMeta{Namespace: policyNS, Labels: map[string]string{"metacel.dev/policy": "true"}}
	tests := []struct {
		name string
		cm   corev1.ConfigMap
		want string
	}{
		{"no data key", corev1.ConfigMap{}, "has no data key"},
		{"only binaryData", corev1.ConfigMap{BinaryData: map[string][]byte{"policy.yaml": []byte("kind: CompositePolicy")}}, `under binaryData ("policy.yaml"), which is never read`},
	}
	for i, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cm := tc.cm
			cm.ObjectMeta = *labelled.DeepCopy()
			cm.Name = fmt.Sprintf("silent-%d", i)
			if _, err := cluster.kube.CoreV1().ConfigMaps(policyNS).Create(t.Context(), &cm, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
			if note := waitEvent(t, policyNS, cm.Name, "PolicyInvalid"); !strings.Contains(note, tc.want) {
				t.Errorf("PolicyInvalid note %q does not say %q", note, tc.want)
			}
		})
	}
}

var blobsGVR = schema.GroupVersionResource{Group: "e2e.metacel.dev", Version: "v1", Resource: "blobs"}

func TestAChildTooLargeToStoreIsReportedAndNotRetried(t *testing.T) {
	rt := startRuntime(t, filepath.Join("testdata", "policies", "blobs"))
	ns := newNamespace(t, "blobs")
	blob := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "e2e.metacel.dev/v1", "kind": "Blob",
		"metadata": map[string]any{"name": "big", "namespace": ns, "labels": map[string]any{"role": "original"}},
		"spec":     map[string]any{"text": strings.Repeat("x", 900_000)}, // doubled: 1.8 MB, past etcd's 1.5 MiB
	}}
	create(t, blobsGVR, blob)
	waitFor(t, blobsGVR, ns, "big", wait, func(b *unstructured.Unstructured) error {
		if err := hasCondition("Synced", "False", "ApplyFailed", "")(b); err != nil {
			return err
		}
		if msg, _ := condition(b, "Synced")["message"].(string); !strings.Contains(msg, "etcd's request limit") {
			return fmt.Errorf("message %q does not name the size limit", msg)
		}
		return nil
	})
	// the failed sync wrote the parent's status, which syncs it again; an edit that renders the
	// same child syncs it once more: neither sends the child again
	child := "/apis/e2e.metacel.dev/v1/namespaces/" + ns + "/blobs" // created: POST to the collection
	syncs := rt.reconciles("doubled")
	patch := []byte(`{"metadata":{"annotations":{"touched":"1"}}}`)
	if _, err := cluster.dynamic.Resource(blobsGVR).Namespace(ns).Patch(t.Context(), "big", types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, wait, "the edited parent synced again", func() error {
		if rt.reconciles("doubled") <= syncs {
			return fmt.Errorf("%v syncs", rt.reconciles("doubled"))
		}
		return nil
	})
	expectEqual(t, "times the child was sent", rt.writesTo(child), 1)

	// a smaller text renders a child etcd stores: it is created
	patch = []byte(`{"spec":{"text":"small"}}`)
	if _, err := cluster.dynamic.Resource(blobsGVR).Namespace(ns).Patch(t.Context(), "big", types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, blobsGVR, ns, "big-doubled", wait, func(*unstructured.Unstructured) error { return nil })
	waitFor(t, blobsGVR, ns, "big", wait, hasCondition("Synced", "True", "", ""))
}
