package policy

import (
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"metacel.dev/metacel/runtime/kinds"
)

// typedChildrenPolicy is a policy whose parent is a Widget (testdata/childschema-crds.yaml) with a
// child of each sort: built-in kinds (Deployment web, Service svc), a custom kind from its CRD
// (Gadget gadget), a forEach child (Pods pods), an expression child (made) and a child of a kind
// nothing knows (Thing thing). The readyWhen of web, gadget, pods and thing, and the status, are
// given by place (a missing one is "true").
func typedChildrenPolicy(at map[string]string) string {
	expr := func(place string) string {
		if e, ok := at[place]; ok {
			return e
		}
		return "true"
	}
	return `apiVersion: metacel.dev/v1alpha1
kind: CompositePolicy
metadata: {name: typed}
spec:
  parentResource: {apiVersion: example.com/v1, resource: widgets}
  childResources:
    - {apiVersion: apps/v1, resource: deployments}
    - {apiVersion: v1, resource: services}
    - {apiVersion: v1, resource: pods}
    - {apiVersion: example.com/v1, resource: gadgets}
    - {apiVersion: example.org/v1, resource: things}
  children:
    - id: web
      template:
        apiVersion: apps/v1
        kind: Deployment
        metadata: {name: web, labels: {app: web}}
        spec:
          selector: {matchLabels: {app: web}}
          template:
            metadata: {labels: {app: web}}
            spec: {containers: [{name: web, image: nginx}]}
      readyWhen: "` + expr("web") + `"
    - id: svc
      template:
        apiVersion: v1
        kind: Service
        metadata: {name: web}
        spec: {selector: {app: web}, ports: [{port: 80}]}
    - id: gadget
      template:
        apiVersion: example.com/v1
        kind: Gadget
        metadata: {name: gadget}
        spec: {owner: {name: me, kind: Team}}
      readyWhen: "` + expr("gadget") + `"
    - id: pods
      forEach: "parent.spec.names"
      template:
        apiVersion: v1
        kind: Pod
        metadata: {name: "${each}"}
        spec: {containers: [{name: app, image: busybox}]}
      readyWhen: "` + expr("pods") + `"
    - id: made
      expression: "[]"
    - id: thing
      template:
        apiVersion: example.org/v1
        kind: Thing
        metadata: {name: thing}
      readyWhen: "` + expr("thing") + `"
  status:
    seen: "${` + expr("status") + `}"
`
}

func TestChildrenAreTypedByTheirKind(t *testing.T) {
	crds, err := kinds.LoadCRDFiles([]string{filepath.Join("testdata", "childschema-crds.yaml")})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name  string
		place string // web, gadget, pods or thing (their readyWhen), or status
		expr  string
		want  string // "" when the policy loads; else the error after "p.yaml:<line of expr>: "
	}{
		{"a misspelt field of a built-in child in its readyWhen says which it likely is", "web",
			"child.?status.?availableReplica.orValue(0) >= 1",
			`spec.children[0].readyWhen: compile "child.?status.?availableReplica.orValue(0) >= 1": undefined field 'availableReplica' (did you mean "availableReplicas"?)`},
		{"a misspelt field of a built-in child read through children says which it likely is", "status",
			"children.?svc.?spec.?clusterIp.orValue('')",
			`spec.status.seen: compile "children.?svc.?spec.?clusterIp.orValue('')": undefined field 'clusterIp' (did you mean "clusterIP"?)`},
		{"the fields of a built-in child compile", "web",
			"child.?status.?availableReplicas.orValue(0) >= child.spec.replicas && child.status.conditions.exists(c, c.type == 'Available' && c.status == 'True')", ""},
		{"children.<id> of a built-in kind compiles with its fields", "status",
			"children.?svc.?spec.?clusterIP.orValue('') + string(children.web.spec.template.spec.containers.size())", ""},
		{"a field's type is checked", "web", "child.spec.replicas == 'three'",
			`spec.children[0].readyWhen: compile "child.spec.replicas == 'three'": found no matching overload for '_==_' applied to '(int, string)'`},
		{"a child's metadata is typed as the parent's", "web", "child.metadata.nmae != ''",
			`spec.children[0].readyWhen: compile "child.metadata.nmae != ''": undefined field 'nmae' (did you mean "name"?)`},
		{"labels are a map of strings", "status", "children.web.metadata.labels.app + children.web.spec.template.metadata.labels['app']", ""},
		{"int-or-string and quantity fields stay open", "status",
			"children.svc.spec.ports.all(p, p.targetPort == 80 || p.targetPort == 'http') && " +
				"children.web.spec.template.spec.containers.all(c, quantity(c.resources.limits.cpu).isGreaterThan(quantity('1'))) && " +
				"children.web.spec.strategy.rollingUpdate.maxSurge == '25%'", ""},
		{"a custom child is typed from its CRD's schema", "gadget", "child.spec.replica > 0",
			`spec.children[2].readyWhen: compile "child.spec.replica > 0": undefined field 'replica' (did you mean "replicas"?)`},
		{"the fields of a custom child compile", "gadget", "child.spec.replicas > 0 && child.spec.owner.name != '' && child.spec.items.all(i, i.size > 0)", ""},
		{"the open fields of a custom child stay open", "gadget", "child.spec.free.anything.at.all == 1 && child.spec.port == 'http' && child.spec.template.spec.x == 1", ""},
		{"a forEach child's id is a list of its kind", "status", "children.pods.map(p, p.spec.nodeNmae)",
			`spec.status.seen: compile "children.pods.map(p, p.spec.nodeNmae)": undefined field 'nodeNmae' (did you mean "nodeName"?)`},
		{"a forEach child's id is a list, not one object", "status", "children.pods.spec",
			`spec.status.seen: compile "children.pods.spec": type 'list(metacel.kind.core.v1.Pod)' does not support field selection`},
		{"the readyWhen of a forEach child sees one object of its kind", "pods", "child.status.phase == 'Running' && child.spec.nodeName != ''", ""},
		{"an expression child stays a list of dyn", "status", "children.made.map(m, m.any.field).size() + children.made[0].whatever", ""},
		{"a child of a kind not known stays dyn", "thing", "child.anything.goes == children.thing.whatever", ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := typedChildrenPolicy(map[string]string{tc.place: tc.expr})
			_, err := Load("p.yaml", []byte(p), crds)
			if tc.want == "" {
				if err != nil {
					t.Fatalf("want the policy to load, got:\n%v", err)
				}
				return
			}
			want := "p.yaml:" + lineOf(p, tc.expr) + ": " + tc.want
			if err == nil || !strings.Contains(err.Error(), want) {
				t.Fatalf("got error:\n%v\nwant it to contain:\n%s", err, want)
			}
		})
	}
}

// lineOf returns the line number of the first line of text holding s.
func lineOf(text, s string) string {
	before, _, _ := strings.Cut(text, s)
	return strconv.Itoa(strings.Count(before, "\n") + 1)
}
