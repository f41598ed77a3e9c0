package rbac

import (
	"fmt"
	"testing"

	"metacel.dev/metacel/runtime/policy"
)

func TestEscalationRules(t *testing.T) {
	rbacRes := func(res ...string) []policy.ChildResource {
		out := make([]policy.ChildResource, len(res))
		for i, r := range res {
			out[i] = policy.ChildResource{APIVersion: "rbac.authorization.k8s.io/v1", Resource: r}
		}
		return out
	}
	binding := func(kind, name string) policy.Child {
		return policy.Child{ID: "b", Template: map[string]any{
			"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
			"roleRef": map[string]any{"apiGroup": "rbac.authorization.k8s.io", "kind": kind, "name": name},
		}}
	}
	tests := []struct {
		name      string
		resources []policy.ChildResource
		children  []policy.Child
		want      string
	}{
		{"no RBAC children", nil, nil, "[]"},
		{"a literal roleRef is bound by name", rbacRes("rolebindings"), []policy.Child{binding("ClusterRole", "view"), binding("Role", "reader")},
			"[{[bind] [rbac.authorization.k8s.io] [clusterroles] [view]} {[bind] [rbac.authorization.k8s.io] [roles] [reader]}]"},
		{"a templated role name needs bind on every role of its kind only", rbacRes("rolebindings"),
			[]policy.Child{binding("Role", "${parent.spec.role}"), binding("ClusterRole", "view")},
			"[{[bind] [rbac.authorization.k8s.io] [clusterroles] [view]} {[bind] [rbac.authorization.k8s.io] [roles] []}]"},
		{"a templated role kind needs bind on every role", rbacRes("rolebindings"), []policy.Child{binding("${parent.spec.kind}", "view")},
			"[{[bind] [rbac.authorization.k8s.io] [clusterroles] []} {[bind] [rbac.authorization.k8s.io] [roles] []}]"},
		{"an expression child may be any binding", rbacRes("clusterrolebindings"), []policy.Child{{ID: "e", Expression: "[]"}},
			"[{[bind] [rbac.authorization.k8s.io] [clusterroles] []} {[bind] [rbac.authorization.k8s.io] [roles] []}]"},
		{"role children need escalate", rbacRes("roles", "clusterroles"), nil,
			"[{[escalate] [rbac.authorization.k8s.io] [clusterroles roles] []}]"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := &policy.CompositePolicy{Spec: policy.Spec{ChildResources: tc.resources, Children: tc.children}}
			got := []string{}
			for _, r := range escalationRules([]*policy.CompositePolicy{p}) {
				got = append(got, fmt.Sprintf("{%v %v %v %v}", r.Verbs, r.APIGroups, r.Resources, r.ResourceNames))
			}
			if s := fmt.Sprint(got); s != tc.want {
				t.Errorf("got  %s\nwant %s", s, tc.want)
			}
		})
	}
}

func TestBindOnRolesAParentsEnumAllows(t *testing.T) {
	schema := &policy.ParentSchema{Kind: "Team", Spec: policy.Fields{
		"role":   map[string]any{"type": "string", "enum": []any{"view", "edit"}},
		"access": map[string]any{"type": "object", "properties": map[string]any{"role": map[string]any{"type": "string", "enum": []any{"view"}}}},
		"free":   "string",
	}}
	binding := func(name string) policy.Child {
		return policy.Child{ID: "b", Template: map[string]any{
			"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
			"roleRef": map[string]any{"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": name},
		}}
	}
	tests := []struct {
		name, roleName, want string
	}{
		{"a field bounded by an enum binds those roles only", "${parent.spec.role}", "[{[bind] [rbac.authorization.k8s.io] [clusterroles] [edit view]}]"},
		{"a nested field bounded by an enum", "${ parent.spec.access.role }", "[{[bind] [rbac.authorization.k8s.io] [clusterroles] [view]}]"},
		{"a field without an enum binds any role", "${parent.spec.free}", "[{[bind] [rbac.authorization.k8s.io] [clusterroles] []}]"},
		{"an expression over the field binds any role", "${parent.spec.role + 'er'}", "[{[bind] [rbac.authorization.k8s.io] [clusterroles] []}]"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := &policy.CompositePolicy{Spec: policy.Spec{ParentSchema: schema,
				ChildResources: []policy.ChildResource{{APIVersion: "rbac.authorization.k8s.io/v1", Resource: "rolebindings"}},
				Children:       []policy.Child{binding(tc.roleName)}}}
			got := []string{}
			for _, r := range escalationRules([]*policy.CompositePolicy{p}) {
				got = append(got, fmt.Sprintf("{%v %v %v %v}", r.Verbs, r.APIGroups, r.Resources, r.ResourceNames))
			}
			if s := fmt.Sprint(got); s != tc.want {
				t.Errorf("got  %s\nwant %s", s, tc.want)
			}
		})
	}
}

func TestBindOnRolesAnEnumAllowsThroughForEachItemsAndVariables(t *testing.T) {
	schema := &policy.ParentSchema{Kind: "Team", Spec: policy.Fields{
		"members": map[string]any{"type": "array", "items": map[string]any{"type": "object", "properties": map[string]any{
			"name": "string", "role": map[string]any{"type": "string", "enum": []any{"admin", "edit", "view"}},
		}}},
		"roles":  map[string]any{"type": "array", "items": map[string]any{"type": "string", "enum": []any{"view"}}},
		"team":   map[string]any{"type": "object", "properties": map[string]any{"role": map[string]any{"type": "string", "enum": []any{"edit"}}}},
		"guests": map[string]any{"type": "array", "items": map[string]any{"type": "object", "properties": map[string]any{"role": "string"}}},
	}}
	variables := []policy.Variable{
		{Name: "team", Expression: "parent.spec.team"},
		{Name: "role", Expression: "variables.team.role"},
		{Name: "members", Expression: "parent.spec.?members.orValue([])"},
		{Name: "suffixed", Expression: "parent.spec.team.role + '-x'"},
	}
	const anyRole = "[{[bind] [rbac.authorization.k8s.io] [clusterroles] []}]"
	tests := []struct {
		name, forEach, roleName, want string
	}{
		{"a forEach item's field bounded by an enum binds those roles only", "parent.spec.members", "${each.role}",
			"[{[bind] [rbac.authorization.k8s.io] [clusterroles] [admin edit view]}]"},
		{"a forEach over an optional list with an empty default", "parent.spec.?members.orValue([])", "${ each.role }",
			"[{[bind] [rbac.authorization.k8s.io] [clusterroles] [admin edit view]}]"},
		{"a forEach item that is itself bounded by an enum", "parent.spec.roles", "${each}",
			"[{[bind] [rbac.authorization.k8s.io] [clusterroles] [view]}]"},
		{"a forEach over a variable that is the list", "variables.members", "${each.role}",
			"[{[bind] [rbac.authorization.k8s.io] [clusterroles] [admin edit view]}]"},
		{"a variable that is the field, through another variable", "", "${variables.role}",
			"[{[bind] [rbac.authorization.k8s.io] [clusterroles] [edit]}]"},
		{"a field of a variable", "", "${variables.team.role}",
			"[{[bind] [rbac.authorization.k8s.io] [clusterroles] [edit]}]"},
		{"a forEach item's field without an enum binds any role", "parent.spec.guests", "${each.role}", anyRole},
		{"a variable computed from the field binds any role", "", "${variables.suffixed}", anyRole},
		{"each outside a forEach binds any role", "", "${each.role}", anyRole},
		{"a forEach over a computed list binds any role", "parent.spec.members.filter(m, m.name != '')", "${each.role}", anyRole},
		{"an optional without a default binds any role", "", "${parent.spec.team.?role}", anyRole},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			child := policy.Child{ID: "b", ForEach: tc.forEach, Template: map[string]any{
				"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
				"roleRef": map[string]any{"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": tc.roleName},
			}}
			p := &policy.CompositePolicy{Spec: policy.Spec{ParentSchema: schema, Variables: variables,
				ChildResources: []policy.ChildResource{{APIVersion: "rbac.authorization.k8s.io/v1", Resource: "rolebindings"}},
				Children:       []policy.Child{child}}}
			got := []string{}
			for _, r := range escalationRules([]*policy.CompositePolicy{p}) {
				got = append(got, fmt.Sprintf("{%v %v %v %v}", r.Verbs, r.APIGroups, r.Resources, r.ResourceNames))
			}
			if s := fmt.Sprint(got); s != tc.want {
				t.Errorf("got  %s\nwant %s", s, tc.want)
			}
		})
	}
}
