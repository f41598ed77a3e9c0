package render

import (
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"metacel.dev/metacel/runtime/expr"
	"metacel.dev/metacel/runtime/kinds"
)

// observedPolicy has one ConfigMap child, named after spec.other, whose data the status reads.
const observedPolicy = `  children:
    - id: cm
      template: {apiVersion: v1, kind: ConfigMap, metadata: {name: "${parent.spec.other}"}}
      readyWhen: "has(child.data)"
    - id: extra
      includeWhen: "false"
      template: {apiVersion: v1, kind: ConfigMap, metadata: {name: extra}}
  status:
    seen: "${children.?cm.?data.?v.orValue('none')}"
`

func TestRenderObservedBindsOnlyTheDesiredChildren(t *testing.T) {
	c := load(t, observedPolicy)
	parent := obj(t, testParent)
	cm := func(extra string) *unstructured.Unstructured {
		return obj(t, "{apiVersion: v1, kind: ConfigMap, data: {v: found}, "+extra+"}")
	}
	tests := []struct {
		name      string
		observed  *unstructured.Unstructured
		seen      string // what the status read
		ready     bool
		undesired bool
		foreign   string // why it is not the parent's child, if it is not
	}{
		{"the labelled child itself is read", cm("metadata: {name: elsewhere, namespace: ns, labels: {metacel.dev/child-id: cm, metacel.dev/parent-uid: u-1}}"),
			"found", true, false, ""},
		{"an unlabelled object with the child's identity is read (an offline file)", cm("metadata: {name: elsewhere, namespace: ns}"),
			"found", true, false, ""},
		{"an object labelled with another id is the child it is by identity", cm("metadata: {name: elsewhere, namespace: ns, labels: {metacel.dev/child-id: extra}}"),
			"found", true, false, ""},
		{"a child under an old name is undesired, not read", cm("metadata: {name: old, namespace: ns, labels: {metacel.dev/child-id: cm, metacel.dev/parent-uid: u-1}}"),
			"none", false, true, ""},
		{"an object in a namespace the parent may not reach is foreign, not undesired", cm("metadata: {name: elsewhere, namespace: other, labels: {metacel.dev/child-id: cm}}"),
			"none", false, false, `it is in namespace "other", where this MyApp's children may not be: the policy reaches the parent's own namespace only (its spec.confinement.childNamespaces allows others)`},
		{"another parent's child is foreign", cm("metadata: {name: elsewhere, namespace: ns, labels: {metacel.dev/child-id: cm, metacel.dev/parent-uid: u-2}}"),
			"none", false, false, "its metacel.dev/parent-uid label names another parent (u-2)"},
		{"another policy's child is foreign", cm("metadata: {name: elsewhere, namespace: ns, labels: {metacel.dev/policy: other}}"),
			"none", false, false, `its metacel.dev/policy label names policy "other"`},
		{"another policy's child by the new key is foreign, whatever the legacy key says", cm("metadata: {name: elsewhere, namespace: ns, labels: {metacel.dev/policy-name: other, metacel.dev/policy: test}}"),
			"none", false, false, `its metacel.dev/policy-name label names policy "other"`},
		{"the policy's child by the legacy key alone (an earlier runtime's) is read", cm("metadata: {name: elsewhere, namespace: ns, labels: {metacel.dev/policy: test, metacel.dev/child-id: cm, metacel.dev/parent-uid: u-1}}"),
			"found", true, false, ""},
		{"an object another owner controls is foreign", cm("metadata: {name: elsewhere, namespace: ns, ownerReferences: [{apiVersion: v1, kind: X, name: x, uid: u-9, controller: true}]}"),
			"none", false, false, "its controller ownerReference names another owner (X x, u-9)"},
		{"an object the parent owns is read", cm("metadata: {name: elsewhere, namespace: ns, ownerReferences: [{apiVersion: v1, kind: X, name: x, uid: u-1, controller: true}]}"),
			"found", true, false, ""},
		{"an object of a resource the policy has no children of is foreign", obj(t, "{apiVersion: v1, kind: Secret, metadata: {name: elsewhere, namespace: ns}}"),
			"none", false, false, `policy "test" has no child resource secrets`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			out, kids, err := RenderObserved(t.Context(), c, Input{Parent: parent, Mapper: kinds.NewCatalog()}, []*unstructured.Unstructured{tc.observed})
			if err != nil {
				t.Fatal(err)
			}
			if out.Status["seen"] != tc.seen {
				t.Errorf("status read %v, want %q", out.Status["seen"], tc.seen)
			}
			if out.Ready() != tc.ready {
				t.Errorf("ready %v, want %v (status and readiness must see the same object)", out.Ready(), tc.ready)
			}
			if got := len(kids.Undesired) == 1; got != tc.undesired {
				t.Errorf("undesired %v, want %v", kids.Undesired, tc.undesired)
			}
			switch {
			case tc.foreign == "" && len(kids.Foreign) > 0:
				t.Errorf("foreign %v, want none", kids.Foreign[0].Why)
			case tc.foreign != "" && (len(kids.Foreign) != 1 || kids.Foreign[0].Why != tc.foreign):
				t.Errorf("foreign %v, want %q", kids.Foreign, tc.foreign)
			}
			if tc.ready && len(kids.ByID["cm"]) != 1 {
				t.Errorf("ByID %v, want the object under cm", kids.ByID)
			}
		})
	}
}

// TestRenderObservedSpendsOneRenderWhenTheLabelsAreRight checks the budget: when every object is
// the child its label names, one render is all that is charged; when a second render is needed,
// only the second is.
func TestRenderObservedSpendsOneRenderWhenTheLabelsAreRight(t *testing.T) {
	c := load(t, observedPolicy)
	parent := obj(t, testParent)
	spent := func(objs ...*unstructured.Unstructured) uint64 {
		b := expr.NewBudget()
		if _, _, err := RenderObserved(t.Context(), c, Input{Parent: parent, Mapper: kinds.NewCatalog(), Budget: b}, objs); err != nil {
			t.Fatal(err)
		}
		return expr.SyncCostBudget - b.Remaining()
	}
	child := obj(t, "{apiVersion: v1, kind: ConfigMap, metadata: {name: elsewhere, namespace: ns, labels: {metacel.dev/child-id: cm}}, data: {v: found}}")
	stale := obj(t, "{apiVersion: v1, kind: ConfigMap, metadata: {name: old, namespace: ns, labels: {metacel.dev/child-id: cm}}, data: {v: found}}")
	b := expr.NewBudget()
	if _, err := Render(t.Context(), c, Input{Parent: parent, Mapper: kinds.NewCatalog(), Budget: b, Observed: map[string][]*unstructured.Unstructured{"cm": {child}}}); err != nil {
		t.Fatal(err)
	}
	one := expr.SyncCostBudget - b.Remaining()
	if one == 0 {
		t.Fatal("a render spent nothing: the test cannot tell one render from two")
	}
	if got := spent(child); got != one {
		t.Errorf("right labels: spent %d, want one render's %d", got, one)
	}
	if got := spent(child, stale); got != one {
		t.Errorf("a stale child: spent %d, want the second render's %d only", got, one)
	}
}
