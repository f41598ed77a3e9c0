//go:build e2e

package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"metacel.dev/metacel/runtime/contract"
)

// TestOrphanChildOutlivesItsParent: a child with deletionPolicy Orphan in the parent's namespace
// carries no ownerReference (the garbage collector would delete it with the parent); the parent's
// finalizer releases it when the parent is deleted.
func TestOrphanChildOutlivesItsParent(t *testing.T) {
	text := strings.Replace(readFile(t, filepath.Join("testdata", "policies", "resync", "widget.yaml")),
		"    - id: config\n", "    - id: config\n      deletionPolicy: Orphan\n", 1)
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "widget.yaml"), []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	startRuntime(t, dir)
	ns := newNamespace(t, "orphan")
	create(t, widgetsGVR, widget(ns, "w"))
	cm := waitFor(t, configMapsGVR, ns, "w-widget", wait, hasData("color", "blue"))
	if refs := cm.GetOwnerReferences(); len(refs) != 0 {
		t.Errorf("an Orphan child must have no ownerReference, has %v", refs)
	}
	waitFor(t, widgetsGVR, ns, "w", wait, hasCondition("Ready", "True", "", ""))

	deleteObj(t, widgetsGVR, ns, "w")
	waitGone(t, widgetsGVR, ns, "w", wait)
	cm, err := get(t, configMapsGVR, ns, "w-widget")
	if err != nil {
		t.Fatalf("the Orphan child must outlive its parent: %v", err)
	}
	if l := cm.GetLabels(); l[contract.LabelParentUID] != "" || l[contract.LabelManagedBy] != "" {
		t.Errorf("the released child must lose metacel's labels: %v", l)
	}
}
