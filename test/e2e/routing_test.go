//go:build e2e

package e2e

import (
	"fmt"
	"path/filepath"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"metacel.dev/metacel/runtime/contract"
)

func peer(ns, name string) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "v1", "kind": "ConfigMap",
		"metadata": map[string]any{"name": name, "namespace": ns, "labels": map[string]any{"peer": "yes"}},
	}}
}

func hasPeers(n int64) func(*unstructured.Unstructured) error {
	return func(obj *unstructured.Unstructured) error {
		got, _, _ := unstructured.NestedInt64(obj.Object, "status", "peers")
		if got != n {
			return fmt.Errorf("status.peers is %d, want %d", got, n)
		}
		return nil
	}
}

// TestEditsThatRemoveAnObjectFromView: an object an edit takes out of what metacel watches or
// selects still re-syncs the parents that read it, through its old version.
func TestEditsThatRemoveAnObjectFromView(t *testing.T) {
	startRuntime(t, filepath.Join("testdata", "policies", "peers"))
	ns := newNamespace(t, "peers")
	create(t, configMapsGVR, peer(ns, "p1"))
	create(t, configMapsGVR, peer(ns, "p2"))
	create(t, widgetsGVR, widget(ns, "w"))
	waitFor(t, widgetsGVR, ns, "w", wait, hasPeers(2))
	waitFor(t, configMapsGVR, ns, "w-p2", wait, hasData("peer", "p2"))
	t.Run("one Created event per child, even when a sync creates several", func(t *testing.T) {
		eventually(t, wait, "Created events naming w-p1 and w-p2", func() error {
			list, err := cluster.kube.EventsV1().Events(ns).List(t.Context(), metav1.ListOptions{})
			if err != nil {
				return err
			}
			notes := map[string]bool{}
			for _, e := range list.Items {
				if e.Regarding.Name == "w" && e.Reason == "Created" {
					notes[e.Note] = true
				}
			}
			for _, want := range []string{"Created ConfigMap " + ns + "/w-p1", "Created ConfigMap " + ns + "/w-p2"} {
				if !notes[want] {
					return fmt.Errorf("no %q among %v", want, notes)
				}
			}
			return nil
		})
	})

	t.Run("a related object that stops matching the selector", func(t *testing.T) {
		patch(t, configMapsGVR, ns, "p2", `{"metadata":{"labels":{"peer":"no"}}}`)
		waitGone(t, configMapsGVR, ns, "w-p2", wait)
		waitFor(t, widgetsGVR, ns, "w", wait, hasPeers(1))
	})

	for _, label := range []string{contract.LabelParentUID, contract.LabelManagedBy} {
		t.Run("a child whose label "+label+" is removed gets it back", func(t *testing.T) {
			patch(t, configMapsGVR, ns, "w-p1", fmt.Sprintf(`{"metadata":{"labels":{%q:null}}}`, label))
			waitFor(t, configMapsGVR, ns, "w-p1", wait, func(cm *unstructured.Unstructured) error {
				if cm.GetLabels()[label] == "" {
					return fmt.Errorf("no label %s", label)
				}
				return nil
			})
			waitFor(t, widgetsGVR, ns, "w", wait, hasCondition("Synced", "True", "", ""))
		})
	}
}
