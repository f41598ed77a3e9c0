package render

import (
	"errors"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/runtime/schema"

	"metacel.dev/metacel/runtime/contract"
	"metacel.dev/metacel/runtime/kinds"
	"metacel.dev/metacel/runtime/policy"
)

// admitPolicy is a policy with an untyped parent and children of the kinds whose mistakes the
// API server's validation finds: what the parent gives is known only at render.
var admitPolicy = strings.Replace(policyHead, "resource: configmaps", "resource: services", 1) + `    - {apiVersion: apps/v1, resource: deployments}
    - {apiVersion: batch/v1, resource: cronjobs}
  children:
`

// admitParent gives what the children take, each valid; a test replaces one.
const admitParent = `
apiVersion: demo.rtfm.co.ua/v1
kind: MyApp
metadata: {name: app, namespace: ns, uid: u-1}
spec: {name: web, owner: ops, port: 80, schedule: "0 3 * * *", app: web}
`

// admitChildren use every field of admitParent.
const admitChildren = `    - id: svc
      template:
        apiVersion: v1
        kind: Service
        metadata: {name: "${parent.spec.name}", labels: {owner: "${parent.spec.owner}"}}
        spec: {ports: [{port: "${parent.spec.port}"}]}
    - id: web
      template:
        apiVersion: apps/v1
        kind: Deployment
        metadata: {name: web}
        spec:
          selector: {matchLabels: {app: web}}
          template:
            metadata: {labels: {app: "${parent.spec.app}"}}
            spec: {containers: [{name: app, image: nginx}]}
    - id: backup
      template:
        apiVersion: batch/v1
        kind: CronJob
        metadata: {name: backup}
        spec:
          schedule: "${parent.spec.schedule}"
          jobTemplate: {spec: {template: {spec: {restartPolicy: OnFailure, containers: [{name: backup, image: busybox}]}}}}
`

func TestChildrenTheAPIServerWouldRefuseFailTheRender(t *testing.T) {
	cs, err := policy.Load("p.yaml", []byte(admitPolicy+admitChildren), kinds.NewCatalog())
	if err != nil {
		t.Fatal(err)
	}
	c := cs[0]
	long := strings.Repeat("s", 77)
	tests := []struct {
		name, old, new string
		want           string // "" when the children render
	}{
		{"valid values", "", "", ""},
		{"a 77-character Service name", "name: web,", "name: " + long + ",",
			`spec.children[0]: Service "` + long + `" is invalid: metadata.name: Invalid value: "` + long + `": must be no more than 63 characters (fix: shorten metadata.name to at most 63 characters)`},
		{"a label value with '@'", "owner: ops,", "owner: ops@example.com,",
			`spec.children[0]: Service "web" is invalid: metadata.labels: Invalid value: "ops@example.com": a valid label must be an empty string or consist of alphanumeric characters`},
		{"port 80800", "port: 80,", "port: 80800,",
			`spec.children[0]: Service "web" is invalid: [spec.ports[0].port: Invalid value: 80800: must be between 1 and 65535, inclusive, spec.ports[0].targetPort: Invalid value: 80800: must be between 1 and 65535, inclusive] (fix: use a port from 1 to 65535)`},
		{"a template's labels the selector does not select", "app: web}", "app: api}",
			"spec.children[1]: Deployment.apps \"web\" is invalid: spec.template.metadata.labels: Invalid value: {\"app\":\"api\"}: `selector` does not match template `labels` (fix: give spec.template.metadata.labels every label spec.selector matches)"},
		{"a six-field schedule", `"0 3 * * *"`, `"0 0 3 * * *"`,
			`spec.children[2]: CronJob.batch "backup" is invalid: spec.schedule: Invalid value: "0 0 3 * * *": expected exactly 5 fields, found 6`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			parent := obj(t, strings.Replace(admitParent, tc.old, tc.new, 1))
			_, err := Render(t.Context(), c, Input{Parent: parent, Mapper: kinds.NewCatalog()})
			var re *Error
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("render: %v", err)
			case tc.want != "" && (!errors.As(err, &re) || re.Reason != contract.ReasonInvalidChild || !strings.HasPrefix(err.Error(), tc.want)):
				t.Fatalf("render: %v\nwant %s starting with\n%s", err, contract.ReasonInvalidChild, tc.want)
			}
		})
	}
}

func TestAdmitChecksTheSchemaThenTheAPIServersValidation(t *testing.T) {
	services := kinds.Info{GVR: schema.GroupVersionResource{Version: "v1", Resource: "services"}, Kind: "Service", Namespaced: true}
	s, err := kinds.SchemaOf(services)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name   string
		object string
		schema *kinds.ObjectSchema
		want   string // "" when admitted
	}{
		{"a valid Service", `{apiVersion: v1, kind: Service, metadata: {name: web, namespace: ns}, spec: {ports: [{port: 80}]}}`, s, ""},
		{"a misspelt field: the schema's answer", `{apiVersion: v1, kind: Service, metadata: {name: web}, spec: {prots: [{port: 80800}]}}`, s,
			`Service "web" does not fit the schema of its kind, so the API server would reject it: spec.prots: unknown field "prots" of Service spec (did you mean "ports"?)`},
		{"a port out of range: the validation's answer", `{apiVersion: v1, kind: Service, metadata: {name: web}, spec: {ports: [{port: 80800, targetPort: 80}]}}`, s,
			`Service "web" is invalid: spec.ports[0].port: Invalid value: 80800: must be between 1 and 65535, inclusive (fix: use a port from 1 to 65535)`},
		{"no schema: the validation alone", `{apiVersion: v1, kind: Service, metadata: {name: Web}, spec: {ports: [{port: 80}]}}`, nil,
			`Service "Web" is invalid: metadata.name: Invalid value: "Web": a lowercase RFC 1123 label must consist of`},
		{"a kind the validation does not know", `{apiVersion: example.com/v1, kind: Gadget, metadata: {name: "Not A Name"}}`, nil, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := Admit(obj(t, tc.object), tc.schema)
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("Admit: %v", err)
			case tc.want != "" && (err == nil || !strings.HasPrefix(err.Error(), tc.want)):
				t.Fatalf("Admit: %v\nwant an error starting with\n%s", err, tc.want)
			}
		})
	}
}
