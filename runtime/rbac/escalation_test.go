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
