//go:build e2e

package e2e

import (
	"fmt"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// TestConfigMapSyncIsConfined: whoever may create a ConfigMapSync in their namespace cannot copy a
// ConfigMap out of a namespace that did not opt in, nor into one that did not.
func TestConfigMapSyncIsConfined(t *testing.T) {
	startRuntime(t, policies)
	attacker, victim, dst := newNamespace(t, "attacker"), newNamespace(t, "victim"), newNamespace(t, "cms-destination")
	create(t, configMapsGVR, &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "v1", "kind": "ConfigMap",
		"metadata": map[string]any{"name": "app-config", "namespace": victim},
		"data":     map[string]any{"password": "hunter2"},
	}})
	steal := sample(t, "configmapsync", attacker)
	_ = unstructured.SetNestedField(steal.Object, victim, "spec", "sourceNamespace")
	_ = unstructured.SetNestedField(steal.Object, attacker, "spec", "destinationNamespace")
	create(t, cmSyncsGVR, steal)

	t.Run("a source namespace that did not opt in is not read", func(t *testing.T) {
		waitFor(t, cmSyncsGVR, attacker, "example-sync", wait, notAllowed(`namespace "`+victim+`" has not opted in`))
		if cm, _ := get(t, configMapsGVR, attacker, "app-config"); cm != nil {
			t.Errorf("the victim's ConfigMap was copied into the attacker's namespace: %v", cm.Object["data"])
		}
	})
	t.Run("a source namespace that opts in is read", func(t *testing.T) {
		patch(t, namespacesGVR, "", victim, `{"metadata":{"labels":{"configmapsync.apps.bixbite.io/source":"true"}}}`)
		waitFor(t, cmSyncsGVR, attacker, "example-sync", wait, hasCondition("Synced", "True", "", ""))
		waitFor(t, configMapsGVR, attacker, "app-config", wait, hasData("password", "hunter2"))
	})
	t.Run("a destination namespace that did not opt in is not written", func(t *testing.T) {
		push := sample(t, "configmapsync", victim)
		push.SetName("push")
		_ = unstructured.SetNestedField(push.Object, victim, "spec", "sourceNamespace")
		_ = unstructured.SetNestedField(push.Object, dst, "spec", "destinationNamespace")
		create(t, cmSyncsGVR, push)
		waitFor(t, cmSyncsGVR, victim, "push", wait, notAllowed(`namespace "`+dst+`" has not opted in`))
		if cm, _ := get(t, configMapsGVR, dst, "app-config"); cm != nil {
			t.Error("a ConfigMap was written into a namespace that did not opt in")
		}
	})
}

// notAllowed checks that a parent reports Synced=False, reason NamespaceNotAllowed, saying why.
func notAllowed(why string) func(*unstructured.Unstructured) error {
	return func(p *unstructured.Unstructured) error {
		if err := hasCondition("Synced", "False", "NamespaceNotAllowed", "")(p); err != nil {
			return err
		}
		if msg, _ := condition(p, "Synced")["message"].(string); !strings.Contains(msg, why) {
			return fmt.Errorf("message %q does not say %q", msg, why)
		}
		return nil
	}
}

var namespacesGVR = schema.GroupVersionResource{Version: "v1", Resource: "namespaces"}
