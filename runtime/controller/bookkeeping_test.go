package controller

import (
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/cache"

	"metacel.dev/metacel/runtime/contract"
	"metacel.dev/metacel/runtime/render"
)

// The case of issue 45: a Secret of a Recreate resource, stored as the runtime applied it but
// without the shard-slot label (as every child of a runtime from before that label). The sync
// patches its metadata once, and neither deletes nor creates it; when the pace has no token left,
// it sends nothing, the parent comes back when its token is due, and the sync is not taken as
// done (its inputs are not remembered, so the next sync is not skipped).
func TestAChildWhoseBookkeepingAloneDiffersIsPatchedNotRecreated(t *testing.T) {
	tests := []struct {
		name      string
		paceSpent bool // another parent took the only token
		want      string
	}{
		{"a token: one merge patch", false, "patch secrets"},
		{"no token: nothing now, the parent again when its token is due", true, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, recreatePolicy)
			h.c.deps.Pace = NewBookkeepingPace(1, 1)
			if tc.paceSpent {
				h.c.deps.Pace.admit("another", 1, h.c.deps.Clock.Now())
			}
			parent := objectFrom(t, `{apiVersion: v1, kind: ConfigMap, metadata: {name: p, namespace: ns, uid: p-1, resourceVersion: "2"}, data: {a: "opaque"}}`)
			h.cacheParent(t, parent)
			out, err := render.Render(t.Context(), h.c.policy, render.Input{Parent: parent})
			if err != nil {
				t.Fatal(err)
			}
			old := out.Children[0].Object.DeepCopy()
			labels := old.GetLabels()
			delete(labels, contract.LabelShardSlot)
			old.SetLabels(labels)
			old.SetUID("s-1")
			old.SetResourceVersion("3")
			meta := objectFrom(t, `{metadata: {`+appliedByMetacel+`}}`)
			old.Object["metadata"].(map[string]any)["managedFields"] = meta.Object["metadata"].(map[string]any)["managedFields"]
			h.cacheChild(t, old)
			h.store(t, secretsGVR, old)
			var patch string
			h.react("patch", "secrets", func(a clienttesting.Action) (bool, runtime.Object, error) {
				p := a.(clienttesting.PatchAction)
				patch = string(p.GetPatchType()) + " " + string(p.GetPatch())
				return false, nil, nil
			})
			if err := h.c.syncer.sync(t.Context(), "ns/p"); err != nil {
				t.Fatal(err)
			}
			var children []string
			for _, w := range h.writes() {
				if !strings.HasSuffix(w, "/status") && strings.HasSuffix(w, "secrets") {
					children = append(children, w)
				}
			}
			if got := strings.Join(children, ","); got != tc.want {
				t.Fatalf("writes to children %q, want %q", got, tc.want)
			}
			if tc.paceSpent {
				if p := h.c.states.byKey["ns/p"]; p != nil && p.knowsInputs || h.c.queue.Len() != 0 {
					t.Errorf("the deferred sync was taken as done, or its parent queued at once")
				}
				if ok, wait := h.c.deps.Pace.admit(h.c.Name()+"/ns/p", 1, h.c.deps.Clock.Now()); ok || wait <= 0 || wait > time.Second {
					t.Errorf("the parent's turn: admitted %v, in %v; want it reserved within a second", ok, wait)
				}
				return
			}
			want := `application/merge-patch+json {"metadata":{"labels":{"metacel.dev/shard-slot":"` + out.Children[0].Object.GetLabels()[contract.LabelShardSlot] + `"},"resourceVersion":"3"}}`
			if patch != want {
				t.Errorf("patch %s, want %s", patch, want)
			}
			got, err := h.client.Resource(secretsGVR).Namespace("ns").Get(t.Context(), old.GetName(), metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if got.GetUID() != "s-1" || got.GetLabels()[contract.LabelShardSlot] == "" {
				t.Errorf("the Secret after the sync: %v", got.Object["metadata"])
			}
		})
	}
}

// A sync that wrote does not leave its inputs from before its writes to skip the next sync: the
// world can come back to them when someone undoes the writes. Here a child out of the caches (its
// app.kubernetes.io/managed-by label removed) is patched back, then loses the label again: the
// caches look as before the first sync, and the next sync must patch again. Before, it was
// skipped as unchanged, and the label stayed away (the e2e test TestEditsThatRemoveAnObjectFromView
// failed so under load, once bookkeeping was patched instead of applied).
func TestASyncAfterItsWritesWereUndoneIsNotSkipped(t *testing.T) {
	h := newHarness(t, secretsPolicy(`  related:
    - {id: peers, apiVersion: v1, resource: configmaps, selector: {matchLabels: {peer: "yes"}}}
`+secretChild(`type: "${parent.data.a}"`)))
	h.c.related.informers[secretsGVR.GroupVersion().WithResource("configmaps").String()] = cache.NewSharedIndexInformer(&cache.ListWatch{}, &unstructured.Unstructured{}, 0,
		cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})
	parent := objectFrom(t, `{apiVersion: v1, kind: ConfigMap, metadata: {name: p, namespace: ns, uid: p-1, resourceVersion: "2"}, data: {a: "opaque"}}`)
	h.cacheParent(t, parent)
	out, err := render.Render(t.Context(), h.c.policy, render.Input{Parent: parent})
	if err != nil {
		t.Fatal(err)
	}
	withoutLabel := func() *unstructured.Unstructured {
		obj := out.Children[0].Object.DeepCopy()
		labels := obj.GetLabels()
		delete(labels, contract.LabelManagedBy)
		obj.SetLabels(labels)
		obj.SetUID("s-1")
		meta := objectFrom(t, `{metadata: {`+appliedByMetacel+`}}`)
		obj.Object["metadata"].(map[string]any)["managedFields"] = meta.Object["metadata"].(map[string]any)["managedFields"]
		return obj
	}
	h.store(t, secretsGVR, withoutLabel()) // not cached: the caches select the label
	patches := func() int {
		n := 0
		for _, w := range h.writes() {
			if w == "patch secrets" {
				n++
			}
		}
		return n
	}
	if err := h.c.syncer.sync(t.Context(), "ns/p"); err != nil {
		t.Fatal(err)
	}
	if n := patches(); n != 1 {
		t.Fatalf("first sync: %d patches of the Secret, want 1 (writes %v)", n, h.writes())
	}
	if err := h.client.Tracker().Update(secretsGVR, withoutLabel(), "ns"); err != nil {
		t.Fatal(err)
	}
	if err := h.c.syncer.sync(t.Context(), "ns/p"); err != nil {
		t.Fatal(err)
	}
	if n := patches(); n != 2 {
		t.Errorf("after the label was removed again: %d patches of the Secret, want 2 (writes %v)", n, h.writes())
	}
}
