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
// nothing knows (Thing thing); and a related object of each sort: a built-in kind (Secret
// password), a list of a custom kind (Gadgets gadgets, by selector), a kind nothing knows (Thing
// thing). The expressions of a validation, of the readyWhen of web, gadget, pods and thing, of
// the status field seen (any value), memory (an integer) and ready (a boolean) and of the replicas
// of web are given by place (a missing one is "true"; memory's 1, replicas' 2, and
// validation's "true").
func typedChildrenPolicy(at map[string]string) string {
	expr := func(place string) string {
		if e, ok := at[place]; ok {
			return e
		}
		switch place {
		case "memory":
			return "1"
		case "replicas":
			return "2"
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
  related:
    - {id: password, apiVersion: v1, resource: secrets, name: "${parent.metadata.name}"}
    - {id: gadgets, apiVersion: example.com/v1, resource: gadgets, selector: {matchLabels: {app: web}}}
    - {id: thing, apiVersion: example.org/v1, resource: things, name: thing}
  validations:
    - expression: "` + expr("validation") + `"
  children:
    - id: web
      template:
        apiVersion: apps/v1
        kind: Deployment
        metadata: {name: web, labels: {app: web}}
        spec:
          replicas: "${` + expr("replicas") + `}"
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
    memory: "${` + expr("memory") + `}"
    ready: "${` + expr("ready") + `}"
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

func TestRelatedAreTypedByTheirKind(t *testing.T) {
	crds, err := kinds.LoadCRDFiles([]string{filepath.Join("testdata", "childschema-crds.yaml")})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name  string
		place string // validation, web (its readyWhen) or status
		expr  string
		want  string // "" when the policy loads; else the error after "p.yaml:<line of expr>: "
	}{
		{"a misspelt field of a related built-in object says which it likely is", "status",
			"related.password.dta",
			`spec.status.seen: compile "related.password.dta": undefined field 'dta' (did you mean "data"?)`},
		{"a misspelt field of a related object in a validation says which it likely is", "validation",
			"!has(related.password) || related.password.typ == 'Opaque'",
			`spec.validations[0].expression: compile "!has(related.password) || related.password.typ == 'Opaque'": undefined field 'typ' (did you mean "type"?)`},
		{"the fields of a related built-in object compile", "web",
			"has(related.password) && related.password.?data.?password.orValue('') != '' && related.password.type == 'Opaque'", ""},
		{"a related object's field types are checked", "status", "related.password.data == 3",
			`spec.status.seen: compile "related.password.data == 3": found no matching overload for '_==_' applied to '(map(string, string), int)'`},
		{"a related object's metadata is typed as the parent's", "status", "related.password.metadata.nmae",
			`spec.status.seen: compile "related.password.metadata.nmae": undefined field 'nmae' (did you mean "name"?)`},
		{"a related entry with a selector is a list of its kind", "status", "related.gadgets.map(g, g.spec.replcas)",
			`spec.status.seen: compile "related.gadgets.map(g, g.spec.replcas)": undefined field 'replcas' (did you mean "replicas"?)`},
		{"a related entry with a selector is a list, not one object", "status", "related.gadgets.spec",
			`spec.status.seen: compile "related.gadgets.spec": type 'list(metacel.kind.example.com.v1.Gadget)' does not support field selection`},
		{"the items of a related list compile with their kind's fields", "status",
			"related.gadgets.all(g, g.spec.replicas > 0 && g.spec.free.any.thing == 1)", ""},
		{"a related object of a kind not known stays dyn", "status", "related.thing.anything.goes", ""},
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

func TestAValueThatMayBeAStringIsRefusedWhereANumberGoes(t *testing.T) {
	crds, err := kinds.LoadCRDFiles([]string{filepath.Join("testdata", "childschema-crds.yaml")})
	if err != nil {
		t.Fatal(err)
	}
	const memory = "children.web.spec.template.spec.containers[0].resources.requests.memory"
	tests := []struct {
		name  string
		place string // memory (an integer status field), ready (a boolean one), status (any value) or replicas (web's)
		expr  string
		want  string // "" when the policy loads; else the error after "p.yaml:<line of expr>: "
	}{
		{"a quantity into an integer status field", "memory", memory,
			`spec.status.memory: "${` + memory + `}" may return a string (it is a quantity, a string such as "64Mi" or a number), ` +
				`but Widget status.memory takes a number: convert it, e.g. "${quantity(string(` + memory + `)).asInteger()}"`},
		{"a quantity read through optionals into an integer status field", "memory",
			"children.?web.?spec.?template.?spec.?containers.orValue([])[0].?resources.?limits[?'cpu'].orValue(1)",
			`may return a string (it is a quantity, a string such as "64Mi" or a number), but Widget status.memory takes a number`},
		{"a string default of an open field into an integer status field", "memory", "children.gadget.spec.free.?size.orValue('1Gi')",
			`spec.status.memory: "${children.gadget.spec.free.?size.orValue('1Gi')}" may return a string ("1Gi" is a string), ` +
				`but Widget status.memory takes a number: give a number instead of "1Gi"`},
		{"a conditional with a string branch into an integer status field", "memory", "has(children.gadget) ? children.gadget.spec.free.size : 'none'",
			`may return a string ("none" is a string), but Widget status.memory takes a number`},
		{"a custom kind's int-or-string into an integer status field", "memory", "children.gadget.spec.port",
			`spec.status.memory: "${children.gadget.spec.port}" may return a string (it is an int-or-string, a number or a string), ` +
				`but Widget status.memory takes a number: convert it, e.g. "${int(children.gadget.spec.port)}"`},
		{"an int-or-string into a boolean status field", "ready", "children.gadget.spec.port",
			`spec.status.ready: "${children.gadget.spec.port}" may return a string (it is an int-or-string, a number or a string), but Widget status.ready takes a boolean`},
		{"an int-or-string into a child's integer field", "replicas", "children.svc.spec.ports[0].targetPort",
			`spec.children[0].template.spec.replicas: "${children.svc.spec.ports[0].targetPort}" may return a string ` +
				`(it is an int-or-string, a number or a string), but Deployment spec.replicas takes a number`},
		{"a quantity converted to an integer fits", "memory", "quantity(string(" + memory + ")).asInteger()", ""},
		{"a number default of an open field fits", "memory", "children.gadget.spec.free.?size.orValue(0)", ""},
		{"a value passed through dyn() is the author's to answer for", "memory", "dyn(" + memory + ")", ""},
		{"an open field that keeps unknown fields may hold a number", "memory", "children.gadget.spec.free.size", ""},
		{"a quantity fits a field of any value", "status", memory, ""},
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
			want := "p.yaml:" + lineOf(p, "${"+tc.expr+"}") + ": "
			if err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got error:\n%v\nwant it to contain:\n%s ... %s", err, want, tc.want)
			}
		})
	}
}
