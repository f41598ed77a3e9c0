package policy

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"metacel.dev/metacel/runtime/kinds"
)

// childPolicy is a policy whose parent is a Widget (typed by testdata/childschema-crds.yaml when
// the test loads it) with one child entry: its fields after id, at 4 spaces, from line 13.
func childPolicy(entry string) string {
	return `apiVersion: metacel.dev/v1alpha1
kind: CompositePolicy
metadata: {name: test}
spec:
  parentResource: {apiVersion: example.com/v1, resource: widgets}
  childResources:
    [{apiVersion: v1, resource: pods},
     {apiVersion: apps/v1, resource: deployments},
     {apiVersion: v1, resource: services},
     {apiVersion: example.com/v1, resource: gadgets}, {apiVersion: policy/v1, resource: poddisruptionbudgets}, {apiVersion: networking.k8s.io/v1, resource: ingresses}]
  children:
    - id: c
` + entry
}

// podWith is a child entry whose template is a Pod with one container holding the given fields
// (at 12 spaces); the container's first field is at line 20.
func podWith(container string) string {
	return `      template:
        apiVersion: v1
        kind: Pod
        metadata: {name: x}
        spec:
          containers:
            - name: app
` + container
}

// templateOf is a child entry whose template is of a kind, with the given fields (at 8 spaces)
// from line 17.
func templateOf(apiVersion, kind, fields string) string {
	return fmt.Sprintf(`      template:
        apiVersion: %s
        kind: %s
        metadata: {name: x}
`, apiVersion, kind) + fields
}

func TestChildSchema(t *testing.T) {
	crds, err := kinds.LoadCRDFiles([]string{filepath.Join("testdata", "childschema-crds.yaml")})
	if err != nil {
		t.Fatal(err)
	}
	const at = "p.yaml:%d: spec.children[0].template."
	tests := []struct {
		name    string
		entry   string
		untyped bool   // load without the CRDs: the parent is untyped, Gadget unknown
		want    string // "" when the policy loads; else a part of the error, after "p.yaml:<line>: spec.children[0].template."
		line    int
	}{
		{"a valid Deployment loads", templateOf("apps/v1", "Deployment", `        spec:
          replicas: "${parent.spec.size}"
          selector: {matchLabels: {app: x}}
          template:
            metadata: {labels: {app: x, version: "1"}}
            spec:
              containers:
                - name: app
                  image: "registry/${parent.spec.port}:1"
                  args: "${parent.spec.names}"
                  ports: [{containerPort: 80}, {containerPort: "${parent.spec.size}", protocol: UDP}]
                  resources: {limits: {cpu: 500m, memory: 64Mi}, requests: {cpu: 0.5, memory: "${parent.spec.size}"}}
                  env: "${parent.spec.?port.optMap(p, [{'name': 'PORT', 'value': p}])}"
`), false, "", 0},
		{"a quoted number where an integer goes", templateOf("apps/v1", "Deployment", "        spec: {replicas: \"3\"}\n"), false,
			`spec.replicas: "3" is a string, but Deployment spec.replicas takes a number: write it unquoted (3)`, 17},
		{"a word where an integer goes", templateOf("apps/v1", "Deployment", "        spec: {replicas: three}\n"), false,
			`spec.replicas: "three" is a string, but Deployment spec.replicas takes a number`, 17},
		{"a misspelt field", templateOf("v1", "Pod", "        spec: {initContainer: []}\n"), false,
			`spec.initContainer: unknown field "initContainer" of Pod spec (did you mean "initContainers"?)`, 17},
		{"a misspelt metadata field", strings.Replace(templateOf("v1", "Pod", ""), "{name: x}", "{name: x, lables: {a: b}}", 1), false,
			`metadata.lables: unknown field "lables" of Pod metadata (did you mean "labels"?)`, 16},
		{"a child entry's field indented into the template", templateOf("v1", "Pod", "        readyWhen: \"true\"\n"), false,
			`readyWhen: unknown field "readyWhen" of Pod: readyWhen belongs to the child entry, not to its template: indent it to the level of template`, 17},
		{"a string parent field into an integer", podWith("              ports: [{containerPort: \"${parent.spec.port}\"}]\n"), false,
			`spec.containers[0].ports[0].containerPort: "${parent.spec.port}" returns string, but Pod spec.containers[0].ports[0].containerPort takes a number: convert it, e.g. "${int(parent.spec.port)}"`, 20},
		{"an untyped parent's field passes", podWith("              ports: [{containerPort: \"${parent.spec.port}\"}]\n"), true, "", 0},
		{"a forEach item of the wrong type", "      forEach: \"parent.spec.names\"\n" + strings.Replace(podWith("              ports: [{containerPort: \"${each}\"}]\n"), "name: x", "name: \"${each}\"", 1), false,
			`spec.containers[0].ports[0].containerPort: "${each}" returns string, but Pod spec.containers[0].ports[0].containerPort takes a number`, 21},
		{"an interpolated string into an integer", podWith("              ports: [{containerPort: \"${parent.spec.size}0\"}]\n"), false,
			`spec.containers[0].ports[0].containerPort: builds a string, but Pod spec.containers[0].ports[0].containerPort takes a number: write the whole value as one expression "${...}"`, 20},
		{"a number into a string", podWith("              env: [{name: A, value: 80}]\n"), false,
			`spec.containers[0].env[0].value: 80 is a number, but Pod spec.containers[0].env[0].value takes a string: quote it ("80")`, 20},
		{"a number into a label", strings.Replace(templateOf("v1", "Pod", ""), "{name: x}", "{name: x, labels: {version: 1}}", 1), false,
			`metadata.labels.version: 1 is a number, but Pod metadata.labels.version takes a string: quote it ("1")`, 16},
		{"a bool parent field into a string", podWith("              image: \"${parent.spec.enabled}\"\n"), false,
			`spec.containers[0].image: "${parent.spec.enabled}" returns bool, but Pod spec.containers[0].image takes a string: convert it, e.g. "${string(parent.spec.enabled)}"`, 20},
		{"a conditional whole value that may leave the field out", podWith("              image: \"${parent.spec.enabled ? parent.spec.port : null}\"\n"), false, "", 0},
		{"an object into a string", podWith("              image: {name: x}\n"), false,
			`spec.containers[0].image: is an object, but Pod spec.containers[0].image takes a string`, 20},
		{"a list into an object", templateOf("v1", "Pod", "        spec: []\n"), false,
			`spec: is a list, but Pod spec takes an object`, 17},
		{"an int-or-string takes a name or a number", templateOf("v1", "Service", "        spec: {ports: [{name: a, port: 80, targetPort: http}, {name: b, port: 81, targetPort: \"${parent.spec.size}\"}]}\n"), false, "", 0},
		{"an int-or-string takes no boolean", templateOf("v1", "Service", "        spec: {ports: [{port: 80, targetPort: true}]}\n"), false,
			`spec.ports[0].targetPort: true is a boolean, but Service spec.ports[0].targetPort takes an integer or a string`, 17},
		{"a literal that is no quantity", podWith("              resources: {limits: {cpu: lots}}\n"), false,
			`spec.containers[0].resources.limits.cpu: "lots" is not a quantity, which Pod spec.containers[0].resources.limits.cpu takes`, 20},
		{"a quantity with a misspelt suffix", podWith("              resources: {limits: {memory: 1Gib}}\n"), false,
			`spec.containers[0].resources.limits.memory: "1Gib" is not a quantity, which Pod spec.containers[0].resources.limits.memory takes (did you mean "1Gi"?)`, 20},
		{"a list of the wrong items", podWith("              args: \"${[1, 2]}\"\n"), false,
			`spec.containers[0].args: "${[1, 2]}" returns list(int), but Pod spec.containers[0].args takes a list`, 20},
		{"a map of the wrong values into labels", strings.Replace(templateOf("v1", "Pod", ""), "{name: x}", "{name: x, labels: \"${{'a': 1}}\"}", 1), false,
			`metadata.labels: "${{'a': 1}}" returns map(string, int), but Pod metadata.labels takes an object`, 16},
		{"two containers with one name", podWith("              image: i\n            - name: app\n"), false,
			`spec.containers[1]: has the same name as item 0: Pod spec.containers merges its items by name, so each needs its own`, 21},
		{"a misspelt field of a custom child", templateOf("example.com/v1", "Gadget", "        spec: {replica: 2}\n"), false,
			`spec.replica: unknown field "replica" of Gadget spec (did you mean "replicas"?)`, 17},
		{"a custom child's open fields take anything", templateOf("example.com/v1", "Gadget", `        spec:
          port: http
          free: {any: [thing, 1, {deep: true}]}
          template: {apiVersion: v1, kind: Pod, metadata: {name: y}, spec: {anything: 1}}
          items: [{name: a, size: "${parent.spec.size}"}]
`), false, "", 0},
		{"a custom child's keyed list needs its keys", templateOf("example.com/v1", "Gadget", "        spec: {items: [{size: 1}]}\n"), false,
			`spec.items[0]: required field "name" of Gadget spec.items[0] is missing: the API server rejects a Gadget without it`, 17},
		{"a Deployment without a selector", templateOf("apps/v1", "Deployment", "        spec: {template: {spec: {containers: [{name: app, image: i}]}}}\n"), false,
			`spec: required field "selector" of Deployment spec is missing: the API server rejects a Deployment without it`, 17},
		{"a container without a name", templateOf("v1", "Pod", "        spec: {containers: [{image: i}]}\n"), false,
			`spec.containers[0]: required field "name" of Pod spec.containers[0] is missing: the API server rejects a Pod without it`, 17},
		{"an Ingress without its paths", templateOf("networking.k8s.io/v1", "Ingress", "        spec: {rules: [{host: a.example.com, http: {}}]}\n"), false,
			`spec.rules[0].http: required field "paths" of Ingress spec.rules[0].http is missing: the API server rejects an Ingress without it`, 17},
		{"a Pod without containers", templateOf("v1", "Pod", "        spec: {restartPolicy: Never}\n"), false,
			`spec: required field "containers" of Pod spec is missing: the API server rejects a Pod without it`, 17},
		{"a templated value counts as present", templateOf("apps/v1", "Deployment", "        spec: {selector: \"${parent.spec.labels}\", template: \"${parent.spec.labels}\"}\n"), false, "", 0},
		{"a status is not written, so its required fields are not checked", templateOf("v1", "Pod", "        spec: {containers: [{name: app, image: app}]}\n        status: {conditions: [{reason: x}]}\n"), false, "", 0},
		{"a custom child's required field", templateOf("example.com/v1", "Gadget", "        spec: {owner: {}}\n"), false,
			`spec.owner: required field "name" of Gadget spec.owner is missing: the API server rejects a Gadget without it`, 17},
		{"a custom child's required field with a default may be left out", templateOf("example.com/v1", "Gadget", "        spec: {owner: {name: a}}\n"), false, "", 0},
		{"an embedded resource's metadata is an ObjectMeta", templateOf("example.com/v1", "Gadget", "        spec: {template: {metadata: {nme: y}}}\n"), false,
			`spec.template.metadata.nme: unknown field "nme" of Gadget spec.template.metadata (did you mean "name"?)`, 17},
		{"a PodDisruptionBudget with minAvailable and maxUnavailable", templateOf("policy/v1", "PodDisruptionBudget", "        spec: {minAvailable: 1, maxUnavailable: 1}\n"), false,
			`spec: PodDisruptionBudget spec takes only one of minAvailable, maxUnavailable, but has minAvailable and maxUnavailable: the API server rejects a PodDisruptionBudget with more than one; keep one`, 17},
		{"an env var with value and valueFrom", templateOf("v1", "Pod", "        spec: {containers: [{name: app, env: [{name: A, value: x, valueFrom: {fieldRef: {fieldPath: metadata.name}}}]}]}\n"), false,
			`spec.containers[0].env[0]: Pod spec.containers[0].env[0] takes only one of value, valueFrom, but has value and valueFrom`, 17},
		{"a probe with two handlers", templateOf("v1", "Pod", "        spec: {containers: [{name: app, readinessProbe: {exec: {command: [x]}, tcpSocket: {port: 80}}}]}\n"), false,
			`spec.containers[0].readinessProbe: Pod spec.containers[0].readinessProbe takes only one of exec, httpGet, tcpSocket, grpc, but has exec and tcpSocket`, 17},
		{"a template that may give null is not counted", templateOf("policy/v1", "PodDisruptionBudget", "        spec: {minAvailable: \"${parent.spec.size}\", maxUnavailable: 1}\n"), false, "", 0},
		{"an unknown custom child is not checked", templateOf("example.com/v1", "Gadget", "        spec: {replica: 2}\n"), true, "", 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var m kinds.Mapper = crds
			if tc.untyped {
				m = kinds.NewCatalog()
			}
			_, err := Load("p.yaml", []byte(childPolicy(tc.entry)), m)
			if tc.want == "" {
				if err != nil {
					t.Fatalf("load: %v", err)
				}
				return
			}
			want := fmt.Sprintf(at, tc.line) + tc.want
			if err == nil || !strings.Contains(err.Error(), want) {
				t.Fatalf("got error:\n%v\nwant it to contain:\n%s", err, want)
			}
		})
	}
}
