package decide

import (
	"slices"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"metacel.dev/metacel/runtime/policy"
	"metacel.dev/metacel/runtime/render"
)

// A sync renders and writes in waves: while a child entry waits for a child the last wave
// created or changed (render.Output.Held), it renders again with the children as the writes left
// them and writes what follows, in the same sync (a Deployment that reads its Secret's name,
// created right after the Secret). The runtime's sync and the offline tools (`render`, `test`,
// `plan`: package preview) decide with RenderAgain whether another wave follows, so that a
// preview shows what one sync of the cluster does.

// Wave is what one wave's writes did.
type Wave struct {
	// Written are the children written, as the API server returned them.
	Written []*unstructured.Unstructured
	// Writes counts the children created, applied, recreated or whose bookkeeping was patched;
	// Deletes those deleted or released, a Recreate's deletion included.
	Writes, Deletes int
	// Stop: a step failed (a conflict, a refusal) or waits for a child being deleted (Await):
	// the sync ends with this wave, and the event that settles it brings the next
	Stop bool
}

// WaveOf is what a wave's steps do offline: every step carried out, each child as the API server
// would return it (Written).
func WaveOf(steps []Step) Wave {
	w := Wave{Written: Written(steps)}
	for _, s := range steps {
		switch s.Action {
		case Create, Update, UpdateBookkeeping:
			w.Writes++
		case Recreate:
			w.Writes++
			w.Deletes++
		case Delete, Release:
			w.Deletes++
		case Await, Conflict, Refuse:
			w.Stop = true
		}
	}
	return w
}

// RenderAgain reports whether the sync of parent renders again after wave number wave (from 0),
// whose render gave out: a child entry waited for a child (out.Held) and the wave wrote, but
// deleted nothing and did not stop (a deletion, a Recreate under way, a step that failed or
// waits: the next sync, which its event brings, goes on), the policy's order is not exhausted (a wave per child entry at most), and every child
// written carries the parent's controller reference (one without, cross-namespace, cluster-scoped
// or orphaned, is known as the parent's only by the record the sync writes after its writes, so a
// render before that would not take it as a child).
func RenderAgain(c *policy.Compiled, parent *unstructured.Unstructured, out *render.Output, wave int, w Wave) bool {
	return len(out.Held) > 0 && w.Writes > 0 && w.Deletes == 0 && !w.Stop && wave < len(c.Children) && allOwnedBy(parent, w.Written)
}

// allOwnedBy reports whether every object carries the parent's controller reference.
func allOwnedBy(parent *unstructured.Unstructured, objs []*unstructured.Unstructured) bool {
	for _, o := range objs {
		ref := metav1.GetControllerOfNoCopy(o)
		if ref == nil || ref.UID != parent.GetUID() {
			return false
		}
	}
	return true
}

// ObjectsAfter is objs with each object written in place of the one of its identity, or added:
// what the next wave renders with.
func ObjectsAfter(objs, written []*unstructured.Unstructured) []*unstructured.Unstructured {
	at := make(map[string]int, len(objs))
	out := slices.Clone(objs)
	for i, o := range out {
		at[render.Identity(o)] = i
	}
	for _, o := range written {
		if i, ok := at[render.Identity(o)]; ok {
			out[i] = o
		} else {
			out = append(out, o)
		}
	}
	return out
}
