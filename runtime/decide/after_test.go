package decide

import (
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"metacel.dev/metacel/runtime/kinds"
	"metacel.dev/metacel/runtime/policy"
	"metacel.dev/metacel/runtime/render"
	"metacel.dev/metacel/test/testpolicies"
)

// app reads the name of db: the first sync creates db alone and holds app.
var heldPolicy = testpolicies.YAML("app-reads-db", testpolicies.Fills{"NAME": "held"})

// The render after a sync's writes sees the child it created, but the entry that waited for it
// still waits: the sync wrote none of its children, so the status must not count them applied,
// and the sync must leave no inputs that would let the create's event pass without a render.
func TestAnEntryHeldByTheFirstRenderStaysHeldAfterTheWrites(t *testing.T) {
	cs, err := policy.Load("held.yaml", []byte(heldPolicy), kinds.NewCatalog())
	if err != nil {
		t.Fatal(err)
	}
	parent := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "example.com/v1", "kind": "Widget", "metadata": map[string]any{"name": "w", "namespace": "ns", "uid": "u-1"}}}
	in := render.Input{Parent: parent, Mapper: kinds.NewCatalog()}
	out, kids, err := render.RenderObserved(t.Context(), cs[0], in, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(out.Held) != 1 || len(out.Children) != 1 {
		t.Fatalf("first render: %d children, held %v; want db alone, app held", len(out.Children), out.Held)
	}
	steps := Writes(out, kids, cs[0])
	again, saw := AfterWrites(t.Context(), cs[0], in, out, kids.ByID, Written(steps))
	if !saw {
		t.Fatal("the render after the writes did not run")
	}
	if len(again.Children) != 1 || len(again.Held) != 1 || again.Held[0].ID != "app" {
		t.Errorf("after the writes: %d children, held %v; want db alone, app still held", len(again.Children), again.Held)
	}
	if c := again.Conditions()[0]; c.Message != "1 child applied" {
		t.Errorf("Synced says %q, want %q", c.Message, "1 child applied")
	}
}
