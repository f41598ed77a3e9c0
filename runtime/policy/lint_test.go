package policy

import (
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"metacel.dev/metacel/runtime/kinds"
	"metacel.dev/metacel/test/testpolicies"
)

// bindingPolicy is the team policy: a Team parent (scope: Namespaced or Cluster) whose one child
// is a binding of kind to ClusterRole role; its template's kind is at line 21, its roleRef at 23.
func bindingPolicy(scope, kind, role, crossNamespace, confinement string) string {
	return testpolicies.YAML("team", testpolicies.Fills{"SCOPE": scope, "KIND": kind, "RESOURCE": strings.ToLower(kind) + "s",
		"ROLE": role, "CROSSNAMESPACE": crossNamespace, "CONFINEMENT": confinement})
}

// TestLintFindsBindingsThatGrantBeyondTheParentsNamespace: Lint warns of a binding child through
// which whoever may create a namespaced parent grants more than its namespace, at the field to
// change, and of nothing else.
func TestLintFindsBindingsThatGrantBeyondTheParentsNamespace(t *testing.T) {
	const (
		none     = "{}"
		confined = "{childNamespaces: {names: [team-a, team-b]}}"
		anywhere = `{childNamespaces: {names: ["*"]}}`
	)
	tests := []struct {
		name   string
		policy string
		want   string // the finding's String; "" for none
	}{
		{"a ClusterRoleBinding child of a namespaced parent grants its role cluster-wide",
			bindingPolicy("Namespaced", "ClusterRoleBinding", "cluster-admin", "true", none),
			"p.yaml:21: spec.children[0].template.kind: warning: a ClusterRoleBinding child of a namespaced parent: whoever may create a parent grants " +
				"ClusterRole cluster-admin cluster-wide; bind in the parent's namespace with a RoleBinding instead"},
		{"a ClusterRole the parent names is any the ServiceAccount may bind",
			bindingPolicy("Namespaced", "RoleBinding", "${parent.spec.target}", "false", none),
			"p.yaml:23: spec.children[0].template.roleRef.name: warning: whoever may create a parent chooses which ClusterRole this binding grants " +
				"(any the policy's ServiceAccount may bind: cluster-admin, if it may bind every one); name the role literally, or bound the parent's " +
				"field by an enum in parentSchema, which metacel rbac turns into the only names it may bind"},
		{"a ClusterRole the parent picks from an enum is bounded",
			bindingPolicy("Namespaced", "RoleBinding", "${parent.spec.role}", "false", none), ""},
		{"a crossNamespace RoleBinding to admin with no confinement writes anywhere",
			bindingPolicy("Namespaced", "RoleBinding", "admin", "true", none),
			"p.yaml:23: spec.children[0].template.roleRef.name: warning: a crossNamespace binding to ClusterRole admin with no confinement: " +
				"whoever may create a parent grants admin in any namespace the parent names; bound the namespaces in spec.confinement.childNamespaces " +
				"(names, an expression or a consentLabel), or bind in the parent's namespace (crossNamespace: false)"},
		{"a confinement to every namespace confines nothing",
			bindingPolicy("Namespaced", "RoleBinding", "edit", "true", anywhere),
			"p.yaml:23: spec.children[0].template.roleRef.name: warning: a crossNamespace binding to ClusterRole edit with no confinement: " +
				"whoever may create a parent grants edit in any namespace the parent names; bound the namespaces in spec.confinement.childNamespaces " +
				"(names, an expression or a consentLabel), or bind in the parent's namespace (crossNamespace: false)"},
		{"a confinement to named namespaces bounds a crossNamespace binding",
			bindingPolicy("Namespaced", "RoleBinding", "cluster-admin", "true", confined), ""},
		{"a RoleBinding to admin in the parent's namespace stays there",
			bindingPolicy("Namespaced", "RoleBinding", "admin", "false", none), ""},
		{"a crossNamespace RoleBinding to view writes nothing",
			bindingPolicy("Namespaced", "RoleBinding", "view", "true", none), ""},
		{"a cluster-scoped parent's author is cluster-wide already",
			bindingPolicy("Cluster", "ClusterRoleBinding", "cluster-admin", "false", none), ""},
		{"an expression child of a policy whose childResources allow no binding binds no role",
			webscalePolicy(nil) + expressionChild, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			findings := Lint(load(t, tt.policy))
			var got []string
			for _, f := range findings {
				got = append(got, f.String())
			}
			switch {
			case tt.want == "" && len(got) > 0:
				t.Errorf("findings %q, want none", got)
			case tt.want != "" && (len(got) != 1 || got[0] != tt.want):
				t.Errorf("findings %q, want one:\n%s", got, tt.want)
			}
		})
	}
}

// TestAFindingIsLocatedAsAFieldError: a finding names the file, the line and the field path, as
// an error of the same field would.
func TestAFindingIsLocatedAsAFieldError(t *testing.T) {
	c := load(t, bindingPolicy("Namespaced", "ClusterRoleBinding", "view", "true", "{}"))
	findings := Lint(c)
	if len(findings) != 1 {
		t.Fatalf("findings %v, want one", findings)
	}
	f := findings[0]
	e := c.Source.Errorf("spec.children[0].template.kind", "m")
	if f.File != e.File || f.Line != e.Line || f.Path != e.Path || f.File != "p.yaml" || f.Line != 21 {
		t.Errorf("finding at %s:%d: %s, want %s:%d: %s (p.yaml:21)", f.File, f.Line, f.Path, e.File, e.Line, e.Path)
	}
}

// expressionChild is a child entry computed by an expression, to append to a policy whose
// children come last.
const expressionChild = "    - id: extra\n      expression: \"[]\"\n"

// webscalePolicy is the webscale policy (a Deployment, an HPA, a Secret), its placeholders filled
// with a Deployment named ${parent.metadata.name} without replicas, the HPA scaling it, and a
// Secret whose data sets user and whose stringData sets password; fills override those.
func webscalePolicy(fills testpolicies.Fills) string {
	all := testpolicies.Fills{"NAME": "${parent.metadata.name}", "REPLICAS": "revisionHistoryLimit: 3", "TARGET_KIND": "Deployment",
		"TARGET_NAME": "${parent.metadata.name}", "DATA": "user: YWRtaW4=",
		"STRING_DATA": `password: "${parent.spec.password}"`}
	maps.Copy(all, fills)
	return testpolicies.YAML("webscale", all)
}

// TestLintFindsChildrenTheAPIServerAcceptsButThatDoNotDoWhatTheySay: Lint warns, at the line to
// change, of a Secret key whose data value the API server drops for stringData's, of an HPA that
// scales no child of the policy, and of a workload child whose replicas a sync would write back
// over its HPA's; of nothing when it cannot tell.
func TestLintFindsChildrenTheAPIServerAcceptsButThatDoNotDoWhatTheySay(t *testing.T) {
	const replicasUnderHPA = `p.yaml:21: spec.children[0].template.spec.replicas: warning: the HPA child "scaler" scales this Deployment, ` +
		`yet its template sets spec.replicas: every sync writes it back over the replicas the HPA chose; leave spec.replicas out and ` +
		`let the HPA own it (docs/cookbook.md, "Handing replicas over to an HPA": how to drop it from a running policy without a dip to 1 replica)`
	tests := []struct {
		name   string
		policy string
		want   []string // the findings' Strings
	}{
		{"a Secret key in both data and stringData loses its data value",
			webscalePolicy(testpolicies.Fills{"DATA": "user: YWRtaW4=, password: c2VjcmV0"}),
			[]string{`p.yaml:42: spec.children[2].template.data.password: warning: key "password" is in both data and stringData: the API ` +
				`server writes stringData's value over data's, so this value is lost without an error; keep the key in one of them (stringData for text)`}},
		{"a key that is not an identifier is located as one",
			webscalePolicy(testpolicies.Fills{"DATA": `"tls.crt": Y2VydA==`, "STRING_DATA": `"tls.crt": "${parent.spec.password}"`}),
			[]string{`p.yaml:42: spec.children[2].template.data["tls.crt"]: warning: key "tls.crt" is in both data and stringData: the API ` +
				`server writes stringData's value over data's, so this value is lost without an error; keep the key in one of them (stringData for text)`}},
		{"Secret keys in data or stringData only are kept", webscalePolicy(nil), nil},
		{"an HPA that scales a kind the policy has no child of",
			webscalePolicy(testpolicies.Fills{"TARGET_KIND": "StatefulSet"}),
			[]string{`p.yaml:34: spec.children[1].template.spec.scaleTargetRef.kind: warning: the HPA scales StatefulSet "${parent.metadata.name}", ` +
				`but the policy has no StatefulSet child: it scales an object the policy does not write (or nothing); name a workload ` +
				`child's kind and name, as its template writes them`}},
		{"an HPA that scales a name no child of its kind has",
			webscalePolicy(testpolicies.Fills{"TARGET_NAME": "${parent.metadata.name}-web"}),
			[]string{`p.yaml:34: spec.children[1].template.spec.scaleTargetRef.name: warning: the HPA scales Deployment ` +
				`"${parent.metadata.name}-web", but no Deployment child of the policy is named so ("${parent.metadata.name}"): it scales an ` +
				`object the policy does not write (or nothing); write the child's name as its template does, the same literal or the same ${} template`}},
		{"an HPA that scales a child by its literal name", webscalePolicy(testpolicies.Fills{"NAME": "web", "TARGET_NAME": "web"}), nil},
		{"an HPA that scales a child by the same template but for spaces",
			webscalePolicy(testpolicies.Fills{"TARGET_NAME": "${ parent.metadata.name }"}), nil},
		{"an HPA's target may be an expression child's, which no lint can tell",
			webscalePolicy(testpolicies.Fills{"TARGET_KIND": "StatefulSet"}) + expressionChild, nil},
		{"a Deployment an HPA scales that sets replicas",
			webscalePolicy(testpolicies.Fills{"REPLICAS": "replicas: 3"}), []string{replicasUnderHPA}},
		{"a Deployment whose replicas come from the parent, under an HPA",
			webscalePolicy(testpolicies.Fills{"REPLICAS": `replicas: "${size(parent.metadata.name)}"`}), []string{replicasUnderHPA}},
		{"a Deployment no HPA scales may set replicas",
			webscalePolicy(testpolicies.Fills{"REPLICAS": "replicas: 3", "TARGET_KIND": "ReplicaSet"}),
			[]string{`p.yaml:34: spec.children[1].template.spec.scaleTargetRef.kind: warning: the HPA scales ReplicaSet "${parent.metadata.name}", ` +
				`but the policy has no ReplicaSet child: it scales an object the policy does not write (or nothing); name a workload ` +
				`child's kind and name, as its template writes them`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := findingsOf(load(t, tt.policy))
			if !slices.Equal(got, tt.want) {
				t.Errorf("findings:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(tt.want, "\n"))
			}
		})
	}
}

// TestLintFindsParentConditionsMetacelWouldReplace: a parent CRD whose status.conditions is no map
// list keyed by type has every other controller's conditions replaced by the ones metacel writes;
// Lint says so at spec.parentResource. The seeds' CRDs declare the map list, and are not found.
func TestLintFindsParentConditionsMetacelWouldReplace(t *testing.T) {
	crd, err := os.ReadFile(filepath.Join("..", "..", "crds", "myapp.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	mapList := "x-kubernetes-list-type: map\n                  x-kubernetes-list-map-keys:\n                    - type\n                  "
	if !strings.Contains(string(crd), mapList) {
		t.Fatal("crds/myapp.yaml no longer declares its conditions as this test reads them")
	}
	const atomicConditions = `p.yaml:6: spec.parentResource: warning: the parent's CRD declares status.conditions as a list that is not a map list keyed by type: ` +
		`the conditions metacel writes (Synced, Ready) replace the whole list, removing those other controllers set; ` +
		`declare it with x-kubernetes-list-type: map and x-kubernetes-list-map-keys: [type], as metav1.Condition lists are`
	tests := []struct {
		name string
		crd  string
		want []string
	}{
		{"conditions as a map list keyed by type", string(crd), nil},
		{"conditions undeclared under a status that keeps unknown fields", strings.Replace(strings.Replace(string(crd), "                conditions:\n", "                notConditions:\n", 1),
			"              description: Observed state of the MyApp, written by the runtime.\n",
			"              description: Observed state of the MyApp, written by the runtime.\n              x-kubernetes-preserve-unknown-fields: true\n", 1), []string{atomicConditions}},
		{"conditions as an atomic list", strings.Replace(string(crd), mapList, "", 1), []string{atomicConditions}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			file := filepath.Join(t.TempDir(), "crd.yaml")
			if err := os.WriteFile(file, []byte(tt.crd), 0o644); err != nil {
				t.Fatal(err)
			}
			catalog, err := kinds.LoadCRDFiles([]string{file})
			if err != nil {
				t.Fatal(err)
			}
			cs, err := Load("p.yaml", []byte(testpolicies.YAML("myapp-head", testpolicies.Fills{"RESOURCE": "configmaps"})), catalog)
			if err != nil {
				t.Fatal(err)
			}
			got := findingsOf(cs[0])
			if !slices.Equal(got, tt.want) {
				t.Errorf("findings:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(tt.want, "\n"))
			}
		})
	}
}

// TestLintFindsWorkloadsThatNeverDoWhatTheySay: a Job with ttlSecondsAfterFinished is deleted once
// finished and created again by the next sync (it runs again); a StatefulSet named with more than
// 52 characters never gets a Pod (its revision label would exceed 63).
func TestLintFindsWorkloadsThatNeverDoWhatTheySay(t *testing.T) {
	head := func(gv, resource string) string {
		return strings.Replace(testpolicies.YAML("myapp-head", testpolicies.Fills{"RESOURCE": resource}), "apiVersion: v1\n      resource:", "apiVersion: "+gv+"\n      resource:", 1) + "  children:\n"
	}
	job := head("batch/v1", "jobs") + `    - id: run
      template:
        apiVersion: batch/v1
        kind: Job
        metadata: {name: "${parent.metadata.name}"}
        spec:
          TTL
          template: {spec: {restartPolicy: Never, containers: [{name: c, image: busybox}]}}
`
	sts := head("apps/v1", "statefulsets") + `    - id: db
      template:
        apiVersion: apps/v1
        kind: StatefulSet
        metadata: {name: NAME}
        spec:
          selector: {matchLabels: {app: db}}
          serviceName: db
          template: {metadata: {labels: {app: db}}, spec: {containers: [{name: c, image: postgres}]}}
`
	long := strings.Repeat("a", 53)
	tests := []struct {
		name, policy string
		want         []string
	}{
		{"a Job with a TTL", strings.Replace(job, "TTL", "ttlSecondsAfterFinished: 60", 1), []string{
			`p.yaml:19: spec.children[0].template.spec.ttlSecondsAfterFinished: warning: the TTL controller deletes the Job once it has finished, and the next sync creates it again: it runs again after every TTL; leave ttlSecondsAfterFinished out (the Job goes with its parent)`}},
		{"a Job without", strings.Replace(job, "TTL", "backoffLimit: 1", 1), nil},
		{"a StatefulSet named with 53 characters", strings.Replace(sts, "NAME", long, 1), []string{
			`p.yaml:17: spec.children[0].template.metadata.name: warning: "` + long + `" has 53 characters: its Pods' label controller-revision-hash (the name, "-" and a hash) would exceed 63, and no Pod is ever created; use at most 52`}},
		{"a StatefulSet named with 52", strings.Replace(sts, "NAME", long[:52], 1), nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := findingsOf(load(t, tt.policy))
			if !slices.Equal(got, tt.want) {
				t.Errorf("findings:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(tt.want, "\n"))
			}
		})
	}
}

// findingsOf is Lint's findings of c, as they print.
func findingsOf(c *Compiled) []string {
	var out []string
	for _, f := range Lint(c) {
		out = append(out, f.String())
	}
	return out
}
