//go:build e2e

package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/runtime/schema"

	"metacel.dev/metacel/runtime/operator"
)

// TestDroppedChildResource reloads a policy without one of its child resources (and the child
// entry of that resource): the runtime no longer watches that resource, and removes its children
// once, as it removes any child no longer desired.
func TestDroppedChildResource(t *testing.T) {
	v2 := readFile(t, filepath.Join("testdata", "policies", "resync", "widget.yaml"))
	// v1 also has a Secret child, of a resource v2 no longer lists
	v1 := strings.NewReplacer(
		"  childResources:\n", "  childResources:\n    - apiVersion: v1\n      resource: secrets\n",
		"  status:\n", `    - id: secret
      template:
        apiVersion: v1
        kind: Secret
        metadata:
          name: "${parent.metadata.name}-widget"
        stringData:
          color: "${parent.spec.?color.orValue('none')}"
  status:
`).Replace(v2)
	dir := t.TempDir()
	file := filepath.Join(dir, "widget.yaml")
	write := func(text string) {
		if err := os.WriteFile(file, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(v1)
	gens := &generations{}
	startRuntimeWith(t, operator.Options{PolicyDirs: []string{dir}, OnReload: gens.set})
	gens.waitFor(t, "widget", 1)
	ns := newNamespace(t, "dropped")
	create(t, widgetsGVR, widget(ns, "w"))
	secrets := schema.GroupVersionResource{Version: "v1", Resource: "secrets"}
	waitFor(t, secrets, ns, "w-widget", wait, nil)
	waitFor(t, configMapsGVR, ns, "w-widget", wait, nil)

	write(v2)
	gens.waitFor(t, "widget", 2)
	waitGone(t, secrets, ns, "w-widget", wait)
	if _, err := get(t, configMapsGVR, ns, "w-widget"); err != nil {
		t.Errorf("the child of a resource still listed must stay: %v", err)
	}
	waitEvent(t, ns, "w", "Deleted")
}
