package controller

import (
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"metacel.dev/metacel/runtime/compact"
)

// After a restart, a parent whose inputs are those the memo of the last run has is known as
// synced, with its conditions: nothing is decoded or rendered. A parent changed since is read.
func TestARecalledParentIsNotSyncedAgain(t *testing.T) {
	for _, tc := range []struct {
		name      string
		rvNow     string
		recalled  bool
		wantReady int
	}{
		{"at the inputs of the memo: not decoded, counted Ready", "1", true, 1},
		{"changed since the memo: read", "2", false, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := newHarness(t, readyWithoutChildren)
			parent := objectFrom(t, `{apiVersion: v1, kind: ConfigMap, metadata: {name: p, namespace: ns, uid: p-1, resourceVersion: "1"}}`)
			before.cacheParent(t, parent)
			if err := before.c.syncer.sync(t.Context(), "ns/p"); err != nil {
				t.Fatal(err)
			}
			if got := before.c.Parents().Count(); got.Ready != 1 {
				t.Fatalf("before the restart: %+v, want the parent Ready", got)
			}
			saved := before.c.Memory().Entries()

			after := newHarness(t, readyWithoutChildren)
			after.c.Memory().Recall(saved)
			undecodable := compact.NewObject(metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"}, metav1.ObjectMeta{Name: "p", Namespace: "ns", UID: "p-1", ResourceVersion: tc.rvNow}, []byte("not JSON"))
			if err := after.c.caches.parents.Whole().GetIndexer().Add(undecodable); err != nil {
				t.Fatal(err)
			}
			err := after.c.syncer.sync(t.Context(), "ns/p")
			if recalled := err == nil; recalled != tc.recalled {
				t.Fatalf("recalled %v (sync: %v), want %v", recalled, err, tc.recalled)
			}
			if got := after.c.Parents().Count(); got.Ready != tc.wantReady {
				t.Errorf("after the restart: %+v, want %d Ready", got, tc.wantReady)
			}
			if tc.recalled && len(after.c.Memory().Entries()) != 1 {
				t.Errorf("memo after the restart %v: the recalled parent is remembered, to be saved again", after.c.Memory().Entries())
			}
		})
	}
}

// readyWithoutChildren is a policy with no child entry whose parents are Ready (spec.readyWhen).
var readyWithoutChildren = secretsPolicy("  readyWhen: \"true\"\n")

// Only a controller whose syncs depend on the fingerprinted inputs alone, holding every parent,
// saves or recalls a memo.
func TestOnlyAControllerOfEveryParentWithoutRelatedObjectsKeepsAMemo(t *testing.T) {
	h := newHarness(t, secretsPolicy(""))
	if !h.c.Memory().Memoizable() || h.c.Memory().Scope() == "" {
		t.Fatalf("a controller of every parent without related objects: Memoizable %v, scope %q", h.c.Memory().Memoizable(), h.c.Memory().Scope())
	}
	share := newHarness(t, secretsPolicy(""))
	share.c.SetShare(func(uid types.UID) bool { return true })
	if share.c.Memory().Memoizable() || share.c.Memory().Entries() != nil {
		t.Error("a controller holding a share keeps a memo")
	}
	other := newHarness(t, strings.Replace(secretsPolicy(""), "name: copy", "name: other", 1))
	if other.c.Memory().Scope() == h.c.Memory().Scope() {
		t.Error("two versions of a policy share a memo scope")
	}
}
