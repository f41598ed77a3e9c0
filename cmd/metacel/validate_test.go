package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"metacel.dev/metacel/test/testpolicies"
)

// widgetPolicy is a policy whose parent is myapps (crds/myapp.yaml) with a Deployment child.
const widgetPolicy = `apiVersion: metacel.dev/v1alpha1
kind: CompositePolicy
metadata:
  name: widget
spec:
  parentResource:
    apiVersion: demo.rtfm.co.ua/v1
    resource: myapps
  childResources:
    - {apiVersion: apps/v1, resource: deployments}
  children:
    - id: deployment
      template:
        apiVersion: apps/v1
        kind: Deployment
        metadata: {name: "${parent.metadata.name}"}
        spec:
          replicas: %s
          selector: {matchLabels: {app: widget}}
          template: {metadata: {labels: {app: widget}}, spec: {containers: [{name: app, image: "${parent.spec.image}"}]}}
`

func TestValidateSaysWhatItChecked(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string) string {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		return path
	}
	good := write("good.yaml", strings.Replace(widgetPolicy, "%s", "2", 1))
	bad := write("bad.yaml", strings.Replace(widgetPolicy, "%s", "three", 1))
	crd := func(name string) string { return filepath.Join(repo, "crds", name+".yaml") }
	tests := []struct {
		name   string
		args   []string
		wantOK bool
		want   string // in the output or the errors
	}{
		{"a CRD of the parent types it", []string{good, "--crd", crd("myapp")}, true,
			`policy "widget" is valid (parent demo.rtfm.co.ua/v1 myapps, typed against CRD myapps.demo.rtfm.co.ua; 1 child entry)`},
		{"without a CRD the parent is untyped, and says so", []string{good}, true,
			`(parent demo.rtfm.co.ua/v1 myapps, untyped: pass --crd to check parent fields; 1 child entry)`},
		{"a CRD that does not define the parent is an error", []string{good, "--crd", crd("memcached")}, false,
			good + `:6: spec.parentResource: myapps.demo.rtfm.co.ua is defined by none of the CRD files given (they define memcacheds.cache.example.com)`},
		{"a directory of CRDs defines every seed parent", []string{filepath.Join(repo, "policies"), "--crd", filepath.Join(repo, "crds")}, true,
			"children of loadbalancers.elbv2.services.k8s.aws unchecked: pass their CRD with --crd"},
		{"-o graph prints the children in the order they are applied, with what each waits for",
			[]string{"-o", "graph", filepath.Join("testdata", "order", "webapp.yaml")}, true,
			"  1. creds\n  2. db\n  3. web: after creds exists (it reads children.creds), after db is ready (its dependsOn names db)\n"},
		{"a child template that does not fit its kind is an error at its line", []string{bad, "--crd", crd("myapp")}, false,
			bad + `:18: spec.children[0].template.spec.replicas: "three" is a string, but Deployment spec.replicas takes a number`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			out, errOut, err := runCLI(t, append([]string{"validate"}, tc.args...)...)
			if (err == nil) != tc.wantOK || !strings.Contains(out+errOut, tc.want) {
				t.Errorf("validate %v: error %v, output:\n%s%s\nwant ok=%v and %q", tc.args, err, out, errOut, tc.wantOK, tc.want)
			}
		})
	}
}

func TestValidateWarnsOfBindingsAParentChooses(t *testing.T) {
	policy := func(roleName string) string {
		return testpolicies.YAML("team", testpolicies.Fills{"SCOPE": "Namespaced", "CONFINEMENT": "{}",
			"RESOURCE": "rolebindings", "KIND": "RoleBinding", "CROSSNAMESPACE": "false", "ROLE": roleName})
	}
	tests := []struct {
		name, roleName string
		warns          bool
	}{
		{"a role the parent names is warned of", "${parent.spec.target}", true},
		{"a role the parent picks from an enum is not", "${parent.spec.role}", false},
		{"a literal role is not", "view", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			file := filepath.Join(t.TempDir(), "team.yaml")
			if err := os.WriteFile(file, []byte(policy(tt.roleName)), 0o644); err != nil {
				t.Fatal(err)
			}
			_, errOut, err := runCLI(t, "validate", file)
			if err != nil {
				t.Fatalf("validate: %v\n%s", err, errOut)
			}
			want := "team.yaml:23: spec.children[0].template.roleRef.name: warning: whoever may create a parent chooses which ClusterRole this binding grants"
			if got := strings.Contains(errOut, want); got != tt.warns {
				t.Errorf("warned %v, want %v:\n%s", got, tt.warns, errOut)
			}
		})
	}
}

func TestValidateWarnsOfBindingsBeyondTheParentsNamespace(t *testing.T) {
	policy := func(binding, role, crossNamespace, confinement string) string {
		return testpolicies.YAML("team", testpolicies.Fills{"SCOPE": "Namespaced", "CONFINEMENT": confinement,
			"RESOURCE": strings.ToLower(binding) + "s", "KIND": binding, "CROSSNAMESPACE": crossNamespace, "ROLE": role})
	}
	const (
		none     = "{}"
		confined = "{childNamespaces: {names: [team-a, team-b]}}"
	)
	tests := []struct {
		name                                       string
		binding, role, crossNamespace, confinement string
		want                                       string // "" for no warning
	}{
		{"a ClusterRoleBinding to cluster-admin names the role it grants cluster-wide", "ClusterRoleBinding", "cluster-admin", "true", none,
			"team.yaml:21: spec.children[0].template.kind: warning: a ClusterRoleBinding child of a namespaced parent: whoever may create a parent grants ClusterRole cluster-admin cluster-wide"},
		{"a crossNamespace RoleBinding to admin with no confinement is warned of", "RoleBinding", "admin", "true", none,
			"team.yaml:23: spec.children[0].template.roleRef.name: warning: a crossNamespace binding to ClusterRole admin with no confinement: whoever may create a parent grants admin in any namespace the parent names"},
		{"a confinement that allows every namespace confines nothing", "RoleBinding", "edit", "true", `{childNamespaces: {names: ["*"]}}`,
			"warning: a crossNamespace binding to ClusterRole edit with no confinement"},
		{"a confinement to named namespaces bounds it", "RoleBinding", "cluster-admin", "true", confined, ""},
		{"a RoleBinding to admin in the parent's namespace stays there", "RoleBinding", "admin", "false", none, ""},
		{"a crossNamespace RoleBinding to view grants no writes", "RoleBinding", "view", "true", none, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			file := filepath.Join(t.TempDir(), "team.yaml")
			if err := os.WriteFile(file, []byte(policy(tt.binding, tt.role, tt.crossNamespace, tt.confinement)), 0o644); err != nil {
				t.Fatal(err)
			}
			_, errOut, err := runCLI(t, "validate", file)
			if err != nil {
				t.Fatalf("validate: %v\n%s", err, errOut)
			}
			if tt.want == "" && strings.Contains(errOut, "warning") || tt.want != "" && !strings.Contains(errOut, tt.want) {
				t.Errorf("want %q, got:\n%s", tt.want, errOut)
			}
		})
	}
}

// typoPolicy is a policy whose parent is myapps (crds/myapp.yaml) with a Deployment and a Service
// child, whose Deployment's readyWhen (line 20) and status (line 28) read a misspelt field each.
const typoPolicy = `apiVersion: metacel.dev/v1alpha1
kind: CompositePolicy
metadata: {name: typo}
spec:
  parentResource: {apiVersion: demo.rtfm.co.ua/v1, resource: myapps}
  childResources:
    - {apiVersion: apps/v1, resource: deployments}
    - {apiVersion: v1, resource: services}
  children:
    - id: web
      template:
        apiVersion: apps/v1
        kind: Deployment
        metadata: {name: "${parent.metadata.name}"}
        spec:
          selector: {matchLabels: {app: web}}
          template:
            metadata: {labels: {app: web}}
            spec: {containers: [{name: web, image: "${parent.spec.image}"}]}
      readyWhen: "child.?status.?availableReplica.orValue(0) > 0"
    - id: svc
      template:
        apiVersion: v1
        kind: Service
        metadata: {name: "${parent.metadata.name}"}
        spec: {selector: {app: web}, ports: [{port: 80}]}
  status:
    phase: "${children.?svc.?spec.?clusterIp.orValue('') != '' ? 'Running' : 'Pending'}"
`

// TestValidateNamesAMisspeltFieldOfAChild: children.<id> and a readyWhen's child are typed by
// their kind, so that a misspelt field fails validate at its line, with the field meant.
func TestValidateNamesAMisspeltFieldOfAChild(t *testing.T) {
	file := filepath.Join(t.TempDir(), "typo.yaml")
	if err := os.WriteFile(file, []byte(typoPolicy), 0o600); err != nil {
		t.Fatal(err)
	}
	_, errOut, err := runCLI(t, "validate", file, "--crd", filepath.Join(repo, "crds", "myapp.yaml"))
	if err == nil {
		t.Fatalf("validate passed a policy with misspelt fields of its children:\n%s", errOut)
	}
	for _, want := range []string{
		file + `:20: spec.children[0].readyWhen: compile "child.?status.?availableReplica.orValue(0) > 0": ` +
			`undefined field 'availableReplica' (did you mean "availableReplicas"?) (column 14 of the expression)`,
		file + `:28: spec.status.phase: compile "children.?svc.?spec.?clusterIp.orValue('') != '' ? 'Running' : 'Pending'": ` +
			`undefined field 'clusterIp' (did you mean "clusterIP"?) (column 20 of the expression)`,
	} {
		if !strings.Contains(errOut, want) {
			t.Errorf("validate said:\n%s\nwant it to say:\n%s", errOut, want)
		}
	}
}

// mistakesPolicy holds one child per mistake the API server refuses and its schema does not say:
// each literal is refused by `validate` at its line (marked on the right).
const mistakesPolicy = `apiVersion: metacel.dev/v1alpha1
kind: CompositePolicy
metadata: {name: mistakes}
spec:
  parentResource: {apiVersion: demo.rtfm.co.ua/v1, resource: myapps}
  childResources:
    - {apiVersion: v1, resource: services}
    - {apiVersion: apps/v1, resource: deployments}
    - {apiVersion: batch/v1, resource: cronjobs}
  children:
    - id: web
      template:
        apiVersion: apps/v1
        kind: Deployment
        metadata: {name: "${parent.metadata.name}"}
        spec:
          selector: {matchLabels: {app: web}}
          template:
            metadata:
              labels: {app: "web-app"}                                  # line 20: not selected
            spec: {containers: [{name: app, image: "${parent.spec.image}"}]}
    - id: backup
      template:
        apiVersion: batch/v1
        kind: CronJob
        metadata: {name: "${parent.metadata.name}-backup"}
        spec:
          schedule: "0 0 3 * * *"                                       # line 28: six fields
          jobTemplate: {spec: {template: {spec: {restartPolicy: OnFailure, containers: [{name: b, image: busybox}]}}}}
    - id: svc
      template:
        apiVersion: v1
        kind: Service
        metadata:
          name: the-service-of-the-shop-front-end-that-takes-the-orders-from-the-internet-now  # line 35: 77 characters
          labels:
            app: "${parent.metadata.name}"
            owner: ops@example.com                                      # line 38: no label value
        spec:
          ports: [{name: http, port: 80800}]                            # line 40: no port
`

// TestValidateRefusesWhatTheAPIServerRefusesAtItsLine: each literal the API server's validation
// of a built-in kind refuses fails validate, at its line, in the API server's words.
func TestValidateRefusesWhatTheAPIServerRefusesAtItsLine(t *testing.T) {
	file := filepath.Join(t.TempDir(), "mistakes.yaml")
	if err := os.WriteFile(file, []byte(mistakesPolicy), 0o600); err != nil {
		t.Fatal(err)
	}
	_, errOut, err := runCLI(t, "validate", file)
	if err == nil {
		t.Fatalf("validate passed a policy whose children the API server refuses:\n%s", errOut)
	}
	for _, want := range []string{
		file + ":20: spec.children[0].template.spec.template.metadata.labels: the API server would refuse this Deployment: spec.template.metadata.labels: Invalid value: {\"app\":\"web-app\"}: `selector` does not match template `labels`",
		file + `:28: spec.children[1].template.spec.schedule: the API server would refuse this CronJob: spec.schedule: Invalid value: "0 0 3 * * *": expected exactly 5 fields, found 6`,
		file + `:35: spec.children[2].template.metadata.name: the API server would refuse this Service: metadata.name: Invalid value: "the-service-of-the-shop-front-end-that-takes-the-orders-from-the-internet-now": must be no more than 63 characters`,
		file + `:38: spec.children[2].template.metadata.labels.owner: the API server would refuse this Service: metadata.labels: Invalid value: "ops@example.com": a valid label must be an empty string`,
		file + `:40: spec.children[2].template.spec.ports[0].port: the API server would refuse this Service: spec.ports[0].port: Invalid value: 80800: must be between 1 and 65535, inclusive`,
	} {
		if !strings.Contains(errOut, want) {
			t.Errorf("validate said:\n%s\nwant it to say:\n%s", errOut, want)
		}
	}
	if n := strings.Count(errOut, "the API server would refuse"); n != 5 {
		t.Errorf("%d refusals, want one per mistake:\n%s", n, errOut)
	}
}

// TestValidateWarnsOfChildrenTheAPIServerAcceptsButThatDoNotDoWhatTheySay: validate passes a policy
// whose children the API server accepts but that do not do what they say, with a warning at the
// line of each, in the order of the lines.
func TestValidateWarnsOfChildrenTheAPIServerAcceptsButThatDoNotDoWhatTheySay(t *testing.T) {
	policy := func(replicas, targetName, data string) string {
		return testpolicies.YAML("webscale", testpolicies.Fills{"NAME": "${parent.metadata.name}-web", "REPLICAS": replicas,
			"TARGET_KIND": "Deployment", "TARGET_NAME": targetName, "DATA": data, "STRING_DATA": `password: "${parent.spec.password}"`})
	}
	tests := []struct {
		name   string
		policy string
		want   []string // the warnings' beginnings, in order
	}{
		{"a Deployment that sets replicas under its HPA, and a Secret key in data and stringData",
			policy("replicas: 2", "${parent.metadata.name}-web", "password: c2VjcmV0"),
			[]string{
				`webscale.yaml:21: spec.children[0].template.spec.replicas: warning: the HPA child "scaler" scales this Deployment, yet its template sets spec.replicas`,
				`webscale.yaml:42: spec.children[2].template.data.password: warning: key "password" is in both data and stringData`,
			}},
		{"an HPA aimed at no child",
			policy("revisionHistoryLimit: 3", "${parent.metadata.name}", "user: YWRtaW4="),
			[]string{`webscale.yaml:34: spec.children[1].template.spec.scaleTargetRef.name: warning: the HPA scales Deployment "${parent.metadata.name}", ` +
				`but no Deployment child of the policy is named so ("${parent.metadata.name}-web")`}},
		{"an HPA that scales its Deployment, which leaves replicas to it",
			policy("revisionHistoryLimit: 3", "${parent.metadata.name}-web", "user: YWRtaW4="), nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			file := filepath.Join(t.TempDir(), "webscale.yaml")
			if err := os.WriteFile(file, []byte(tt.policy), 0o644); err != nil {
				t.Fatal(err)
			}
			_, errOut, err := runCLI(t, "validate", file)
			if err != nil {
				t.Fatalf("validate: %v\n%s", err, errOut)
			}
			var got []string
			for line := range strings.Lines(errOut) {
				if strings.Contains(line, "warning:") {
					got = append(got, line)
				}
			}
			if len(got) != len(tt.want) {
				t.Fatalf("warnings:\n%s\nwant %d:\n%s", strings.Join(got, ""), len(tt.want), strings.Join(tt.want, "\n"))
			}
			for i, want := range tt.want {
				if !strings.HasPrefix(got[i], filepath.Dir(file)+string(filepath.Separator)+want) {
					t.Errorf("warning %d:\n%s\nwant it to begin %s", i, got[i], want)
				}
			}
		})
	}
}
