//go:build e2e

package e2e

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// TestStatusWriteFailureIsReported: a status the API server rejects (a string where the CRD's
// status schema wants an integer, from a field whose type the policy cannot know at load) is a
// Warning event on the parent, since its conditions cannot be written either.
func TestStatusWriteFailureIsReported(t *testing.T) {
	crd := strings.NewReplacer("cogs", "bolts", "Cog", "Bolt", "cog", "bolt",
		"x-kubernetes-preserve-unknown-fields: true", "x-kubernetes-preserve-unknown-fields: true\n              properties:\n                size: {type: integer}").
		Replace(cogCRD())
	applyCRD(t, crd, "bolts.e2e.metacel.dev")
	t.Cleanup(func() { _, _ = kubectlCmd(context.Background(), "delete", "crd", "bolts.e2e.metacel.dev", "--wait") })
	dir := t.TempDir()
	// a dyn value: its type is known only when it is computed, so the policy loads (a string
	// literal into size would not)
	policy := strings.NewReplacer("cogs", "bolts", "cog", "bolt").Replace(string(cogPolicy(t))) + "  status:\n    size: \"${parent.spec.size == 3 ? dyn('big') : dyn(0)}\"\n"
	if err := os.WriteFile(filepath.Join(dir, "bolt.yaml"), []byte(policy), 0o644); err != nil {
		t.Fatal(err)
	}
	startRuntime(t, dir)
	ns := newNamespace(t, "bolt")
	create(t, schema.GroupVersionResource{Group: "e2e.metacel.dev", Version: "v1", Resource: "bolts"}, &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "e2e.metacel.dev/v1", "kind": "Bolt",
		"metadata": map[string]any{"name": "b", "namespace": ns},
		"spec":     map[string]any{"size": int64(3)},
	}})
	waitFor(t, configMapsGVR, ns, "b-bolt", wait, hasData("size", "3"))
	if note := waitEvent(t, ns, "b", "StatusFailed"); !strings.Contains(note, "status.size") {
		t.Errorf("the event should name the rejected field: %s", note)
	}
}
