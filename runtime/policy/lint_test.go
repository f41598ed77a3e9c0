package policy

import (
	"strings"
	"testing"

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
