package decide_test

import (
	"context"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"metacel.dev/metacel/runtime/decide"
	"metacel.dev/metacel/runtime/render"
)

// BenchmarkWritesConverged decides the sync of a parent whose child is as the policy wants (the
// common case of a sync that renders): the no-op check of the content, and of the bookkeeping.
func BenchmarkWritesConverged(b *testing.B) {
	c := load(&testing.T{}, "Recreate")
	parentObj := object(&testing.T{}, parent)
	obs := cronJob(&testing.T{}, c, true, "")
	out, kids, err := render.RenderObserved(context.Background(), c, render.Input{Parent: parentObj}, []*unstructured.Unstructured{obs})
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		if steps := decide.Writes(out, kids, c); len(steps) != 0 {
			b.Fatalf("steps %v", steps)
		}
	}
}
