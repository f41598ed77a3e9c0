package render

import (
	"errors"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"metacel.dev/metacel/runtime/contract"
	"metacel.dev/metacel/runtime/kinds"
)

// reservedNS is the runtime's records namespace in these tests.
const reservedNS = "metacel-system"

func TestAChildIsNeverPlacedInTheReservedNamespace(t *testing.T) {
	crossNamespace := `  confinement: {childNamespaces: {names: ["*"]}}
  children:
    - id: leak
      crossNamespace: true
      template: {apiVersion: v1, kind: ConfigMap, metadata: {name: x, namespace: "${parent.spec.other}"}}
`
	ownNamespace := `  children:
    - id: leak
      template: {apiVersion: v1, kind: ConfigMap, metadata: {name: x}}
`
	clusterParent := `  children:
    - id: leak
      template: {apiVersion: v1, kind: ConfigMap, metadata: {name: x, namespace: "${parent.spec.other}"}}
`
	tests := []struct {
		name     string
		body     string
		parent   string
		reserved string
		want     string // "" when the child may be written
	}{
		{"a policy that allows any namespace may not place a child there", crossNamespace, testParentIn("ns", reservedNS), reservedNS,
			`spec.children[0]: child "leak": ConfigMap metacel-system/x is in namespace "metacel-system", which holds the runtime's own records (its policies, rollout records and memos) and never a child: give the child another namespace`},
		{"a parent in the reserved namespace may not place its children there", ownNamespace, testParentIn(reservedNS, "x"), reservedNS,
			`ConfigMap metacel-system/x is in namespace "metacel-system"`},
		{"a cluster-scoped parent may not place a child there", clusterParent, testParentIn("", reservedNS), reservedNS,
			`ConfigMap metacel-system/x is in namespace "metacel-system"`},
		{"another namespace the policy allows is fine", crossNamespace, testParentIn("ns", "elsewhere"), reservedNS, ""},
		{"no reserved namespace reserves none", crossNamespace, testParentIn("ns", reservedNS), "", ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			out, err := Render(t.Context(), load(t, tc.body), Input{Parent: obj(t, tc.parent), Mapper: kinds.NewCatalog(), ReservedNamespace: tc.reserved})
			var re *Error
			switch {
			case tc.want == "" && err != nil:
				t.Errorf("render: %v, want the child", err)
			case tc.want == "":
			case !errors.As(err, &re) || re.Reason != contract.ReasonNamespaceNotAllowed || !strings.Contains(err.Error(), tc.want):
				t.Errorf("render: %v (output %v), want %s saying %q", err, out, contract.ReasonNamespaceNotAllowed, tc.want)
			}
		})
	}
}

// testParentIn is testParent in namespace ns ("": cluster-scoped), with spec.other set to other.
func testParentIn(ns, other string) string {
	meta := "metadata: {name: app, uid: u-1, generation: 3}"
	if ns != "" {
		meta = "metadata: {name: app, namespace: " + ns + ", uid: u-1, generation: 3}"
	}
	return "{apiVersion: demo.rtfm.co.ua/v1, kind: MyApp, " + meta + ", spec: {other: " + other + "}}"
}

func TestObservedChildrenOutOfReachAreForeign(t *testing.T) {
	// one child, in the namespace spec.other names: any object elsewhere that carries the parent's
	// labels is undesired when the parent may reach its namespace (a sync deletes it), foreign when
	// not (a sync leaves it alone)
	child := `  children:
    - id: cm
      crossNamespace: true
      template: {apiVersion: v1, kind: ConfigMap, metadata: {name: x, namespace: "${parent.spec.other}"}}
`
	consenting := func(name string) (map[string]string, bool) {
		return map[string]string{"example.com/share": "true"}, name == "consenting"
	}
	tests := []struct {
		name        string
		confinement string
		parent      string
		namespace   string // of the observed object, which carries the parent's labels
		foreign     string // why it is foreign; "" when it is undesired
	}{
		{"in the parent's own namespace", "", testParentIn("ns", "ns"), "ns", ""},
		{"in another namespace, without confinement", "", testParentIn("ns", "ns"), "attacker",
			`it is in namespace "attacker", where this MyApp's children may not be: the policy reaches the parent's own namespace only`},
		{"in a namespace the confinement names", "{childNamespaces: {names: [old]}}", testParentIn("ns", "old"), "old", ""},
		{"in a namespace the confinement does not name", "{childNamespaces: {names: [old]}}", testParentIn("ns", "old"), "attacker",
			"spec.confinement.childNamespaces does not name it"},
		{"in a namespace the expression over the parent names", `{childNamespaces: {expression: "['a', 'b']"}}`, testParentIn("ns", "a"), "b", ""},
		{"in a namespace the expression does not name", `{childNamespaces: {expression: "['a', 'b']"}}`, testParentIn("ns", "a"), "attacker",
			"spec.confinement.childNamespaces does not name it"},
		{"in a namespace that consents", "{childNamespaces: {consentLabel: example.com/share}}", testParentIn("ns", "ns"), "consenting", ""},
		{"in a namespace that does not consent", "{childNamespaces: {consentLabel: example.com/share}}", testParentIn("ns", "ns"), "attacker",
			`namespace "attacker" has not opted in`},
		{"when the confinement expression fails", `{childNamespaces: {expression: "parent.spec.missing"}}`, testParentIn("ns", "ns"), "attacker",
			"its confinement cannot be judged"},
		{"in the reserved namespace, whatever the confinement allows", `{childNamespaces: {names: ["*"]}}`, testParentIn("ns", "ns"), reservedNS,
			`it is in namespace "metacel-system", where this MyApp's children may not be: it holds the runtime's own records`},
		{"anywhere but the reserved namespace, under a cluster-scoped parent", "", testParentIn("", "ns"), "attacker", ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			body := child
			if tc.confinement != "" {
				body = "  confinement: " + tc.confinement + "\n" + child
			}
			forged := obj(t, "{apiVersion: v1, kind: ConfigMap, metadata: {name: forged, namespace: "+tc.namespace+
				", labels: {metacel.dev/policy: test, metacel.dev/child-id: cm, metacel.dev/parent-uid: u-1}}}")
			in := Input{Parent: obj(t, tc.parent), Mapper: kinds.NewCatalog(), Namespaces: consenting, ReservedNamespace: reservedNS}
			_, kids, err := RenderObserved(t.Context(), load(t, body), in, []*unstructured.Unstructured{forged})
			if err != nil && tc.foreign == "" {
				t.Fatal(err)
			}
			switch {
			case tc.foreign == "" && len(kids.Undesired) != 1:
				t.Errorf("undesired %v, foreign %v: want the object undesired (the parent may reach its namespace)", kids.Undesired, kids.Foreign)
			case tc.foreign != "" && (len(kids.Undesired) != 0 || len(kids.Foreign) != 1 || !strings.Contains(kids.Foreign[0].Why, tc.foreign)):
				t.Errorf("undesired %v, foreign %v: want it foreign, saying %q", kids.Undesired, kids.Foreign, tc.foreign)
			}
		})
	}
}
