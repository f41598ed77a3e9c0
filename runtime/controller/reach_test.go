package controller

import (
	"strings"
	"testing"
)

// reachPolicy writes its child, when the parent's data.ns names a namespace, into that namespace;
// its parents may reach namespace far (and the reserved one, which no confinement opens).
const reachPolicy = `apiVersion: metacel.dev/v1alpha1
kind: CompositePolicy
metadata: {name: copy}
spec:
  parentResource: {apiVersion: v1, resource: configmaps}
  confinement: {childNamespaces: {names: [far, metacel-system]}}
  childResources:
    - {apiVersion: v1, resource: secrets}
  children:
    - id: copy
      crossNamespace: true
      includeWhen: "has(parent.data) && has(parent.data.ns)"
      template:
        apiVersion: v1
        kind: Secret
        metadata: {name: "${parent.metadata.name}-copy", namespace: "${parent.data.ns}"}
`

func TestAnObjectOutOfTheParentsReachNeitherPinsItNorIsCleanedUp(t *testing.T) {
	const deleting = `deletionTimestamp: "2026-11-23T12:00:00Z", finalizers: [metacel.dev/cleanup]`
	tests := []struct {
		name      string
		parent    string // the parent's extra metadata
		namespace string // of an object applied by metacel that carries the parent's labels
		want      string // the writes of one sync
		reported  bool   // a ChildOutOfReach event says the object is ignored
	}{
		{"an object in a namespace the parent may not reach gives it no finalizer and is not deleted", ``, "attacker", "", true},
		{"an object in a namespace the parent may reach is its child: the finalizer, then the object deleted", ``, "far", "patch configmaps,delete secrets", false},
		{"a deleted parent is finalized past an object it may not reach", deleting, "attacker", "patch configmaps", true},
		{"a deleted parent is finalized past an object in the reserved namespace", deleting, "metacel-system", "patch configmaps", true},
		{"a deleted parent deletes its child in a namespace it may reach, and waits for it", deleting, "far", "delete secrets", false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, reachPolicy)
			h.c.deps.ReservedNamespace = "metacel-system"
			parent := objectFrom(t, `{apiVersion: v1, kind: ConfigMap, metadata: {name: p, namespace: ns, uid: p-1, `+tc.parent+`}}`)
			h.store(t, configmapsGVR, parent)
			h.cacheParent(t, parent)
			// anyone may set the labels, and use metacel's field manager, and keep the object with
			// a finalizer of their own
			forged := objectFrom(t, `{apiVersion: v1, kind: Secret, metadata: {name: forged, namespace: `+tc.namespace+`, uid: s-1, finalizers: [example.com/keep],
  labels: {app.kubernetes.io/managed-by: metacel, metacel.dev/policy: copy, metacel.dev/parent-uid: p-1, metacel.dev/child-id: copy}, `+appliedByMetacel+`}}`)
			h.store(t, secretsGVR, forged)
			h.cacheChild(t, forged)
			if err := h.c.sync(t.Context(), "ns/p"); err != nil {
				t.Fatal(err)
			}
			if w := strings.Join(h.writes(), ","); w != tc.want {
				t.Errorf("writes %q, want %q", w, tc.want)
			}
			reported := false
			for len(h.recorder.Events) > 0 {
				if e := <-h.recorder.Events; strings.Contains(e, ReasonChildOutOfReach+" Ignored Secret "+tc.namespace+"/forged") {
					reported = true
				}
			}
			if reported != tc.reported {
				t.Errorf("reported %v, want %v", reported, tc.reported)
			}
		})
	}
}
