package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
	"sigs.k8s.io/yaml"
)

// memberPolicy is a Team policy with a RoleBinding child per member (forEach, when forEach is not
// ""), whose roleRef names the ClusterRole roleName; members' roles and the team's defaultRole are
// bounded by enums, variables.role is the team's defaultRole and variables.members its members.
func memberPolicy(forEach, roleName string) string {
	if forEach != "" {
		forEach = "forEach: " + forEach
	}
	return strings.NewReplacer("FOREACH", forEach, "ROLE", roleName).Replace(`apiVersion: metacel.dev/v1alpha1
kind: CompositePolicy
metadata: {name: team}
spec:
  serviceAccountName: metacel-team
  parentResource: {apiVersion: example.com/v1, resource: teams}
  parentSchema:
    kind: Team
    spec:
      defaultRole: {type: string, enum: [view, edit]}
      owner: string
      members:
        type: array
        maxItems: 50
        items:
          type: object
          properties:
            name: string
            role: {type: string, enum: [admin, edit, view]}
  variables:
    - {name: role, expression: parent.spec.defaultRole}
    - {name: members, expression: "parent.spec.?members.orValue([])"}
  childResources:
    - {apiVersion: rbac.authorization.k8s.io/v1, resource: rolebindings}
  children:
    - id: member
      FOREACH
      template:
        apiVersion: rbac.authorization.k8s.io/v1
        kind: RoleBinding
        metadata: {name: "${parent.metadata.name}-member"}
        roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: "ROLE"}
        subjects:
          - {apiGroup: rbac.authorization.k8s.io, kind: Group, name: "${parent.metadata.name}"}
`)
}

// TestRBACBindsTheRolesAnEnumAllows: `metacel rbac` gives a binding child bind on the ClusterRoles
// an enum allows (resourceNames) when its roleRef's name is the enum's field, directly, through a
// forEach item or through a variable, and bind on every ClusterRole (and a warning from validate)
// when nothing bounds it.
func TestRBACBindsTheRolesAnEnumAllows(t *testing.T) {
	tests := []struct {
		name, forEach, roleName string
		wantNames               []string // nil: bind on every ClusterRole
	}{
		{"a field of the parent's spec", "", "${parent.spec.defaultRole}", []string{"edit", "view"}},
		{"a forEach item's field", "parent.spec.members", "${each.role}", []string{"admin", "edit", "view"}},
		{"a forEach item's field, over a variable", "variables.members", "${each.role}", []string{"admin", "edit", "view"}},
		{"a variable", "", "${variables.role}", []string{"edit", "view"}},
		{"a field without an enum", "", "${parent.spec.owner}", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			file := filepath.Join(t.TempDir(), "team.yaml")
			if err := os.WriteFile(file, []byte(memberPolicy(tt.forEach, tt.roleName)), 0o644); err != nil {
				t.Fatal(err)
			}
			out, errOut, err := runCLI(t, "rbac", file)
			if err != nil {
				t.Fatalf("rbac: %v\n%s", err, errOut)
			}
			bind := bindRule(t, out, "metacel:metacel-system:metacel-team")
			if bind == nil {
				t.Fatalf("no bind rule in:\n%s", out)
			}
			if strings.Join(bind.Resources, ",") != "clusterroles" || strings.Join(bind.ResourceNames, ",") != strings.Join(tt.wantNames, ",") {
				t.Errorf("bind on %v named %v, want clusterroles named %v", bind.Resources, bind.ResourceNames, tt.wantNames)
			}
			_, errOut, err = runCLI(t, "validate", file)
			if err != nil {
				t.Fatalf("validate: %v\n%s", err, errOut)
			}
			if warned := strings.Contains(errOut, "team.yaml:32: spec.children[0].template.roleRef.name: warning: whoever may create a parent chooses"); warned != (tt.wantNames == nil) {
				t.Errorf("validate warned %v, want %v:\n%s", warned, tt.wantNames == nil, errOut)
			}
		})
	}
}

// bindRule returns the rule with the verb bind of the ClusterRole named name in rbac's output.
func bindRule(t *testing.T, out, name string) *rbacv1.PolicyRule {
	t.Helper()
	for _, doc := range strings.Split(out, "\n---\n") {
		var role rbacv1.ClusterRole
		if err := yaml.Unmarshal([]byte(doc), &role); err != nil {
			t.Fatalf("rbac's output: %v\n%s", err, doc)
		}
		if role.Kind != "ClusterRole" || role.Name != name {
			continue
		}
		for i, r := range role.Rules {
			if len(r.Verbs) == 1 && r.Verbs[0] == "bind" {
				return &role.Rules[i]
			}
		}
	}
	return nil
}
