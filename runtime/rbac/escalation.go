package rbac

import (
	"maps"
	"slices"
	"strings"

	rbacv1 "k8s.io/api/rbac/v1"

	"metacel.dev/metacel/runtime/policy"
)

// The API server refuses to let anyone grant permissions they do not hold: creating a binding
// needs the verb bind on the role it refers to, and creating a role needs the verb escalate (or
// holding every permission in it). A policy whose children are bindings or roles needs those.

const rbacGroup = "rbac.authorization.k8s.io"

// escalationRules returns the bind and escalate rules of the policies' RBAC children. A binding
// whose roleRef is written literally in a template is bound by name; one whose name is templated
// needs bind on every role of its kind; an expression child, on every role.
func escalationRules(policies []*policy.CompositePolicy) []rbacv1.PolicyRule {
	bind := map[string]*refs{} // by role resource: roles, clusterroles
	escalate := map[string]bool{}
	for _, p := range policies {
		children := childResources(p)
		for _, res := range []string{"roles", "clusterroles"} {
			if children[res] {
				escalate[res] = true
			}
		}
		if !children["rolebindings"] && !children["clusterrolebindings"] {
			continue
		}
		for _, c := range p.Spec.Children {
			for _, r := range roleRefs(c) {
				if r.name == "" {
					refsOf(bind, r.resource).any = true
				} else {
					refsOf(bind, r.resource).add(r.name)
				}
			}
		}
	}
	var out []rbacv1.PolicyRule
	for _, res := range slices.Sorted(maps.Keys(bind)) {
		r := rbacv1.PolicyRule{APIGroups: []string{rbacGroup}, Resources: []string{res}, Verbs: []string{"bind"}}
		if !bind[res].any {
			r.ResourceNames = slices.Sorted(maps.Keys(bind[res].names))
		}
		out = append(out, r)
	}
	if len(escalate) > 0 {
		out = append(out, rbacv1.PolicyRule{APIGroups: []string{rbacGroup}, Resources: slices.Sorted(maps.Keys(escalate)), Verbs: []string{"escalate"}})
	}
	return out
}

// childResources returns the resources of the RBAC group a policy's children may be.
func childResources(p *policy.CompositePolicy) map[string]bool {
	out := map[string]bool{}
	for _, c := range p.Spec.ChildResources {
		if gr(c.APIVersion, c.Resource).Group == rbacGroup {
			out[c.Resource] = true
		}
	}
	return out
}

// boundRole is a role a binding child may refer to: its resource (roles, clusterroles) and its
// name, "" when it is not known before render.
type boundRole struct{ resource, name string }

// roleRefs reads the roles a child may bind: the literal roleRef of a binding template, or, when
// the kind or the name is templated, any role of the kinds it may refer to (a ClusterRoleBinding
// binds ClusterRoles only). An expression child may be any binding.
func roleRefs(c policy.Child) []boundRole {
	every := []boundRole{{resource: "roles"}, {resource: "clusterroles"}}
	if c.Template == nil {
		return every
	}
	bindingKind, _ := c.Template["kind"].(string)
	switch bindingKind {
	case "RoleBinding":
	case "ClusterRoleBinding":
		every = every[1:]
	default:
		return nil
	}
	ref, _ := c.Template["roleRef"].(map[string]any)
	kind, _ := ref["kind"].(string)
	name, _ := ref["name"].(string)
	if kind == "" || strings.Contains(kind, "${") {
		return every
	}
	resource := strings.ToLower(kind) + "s"
	if strings.Contains(name, "${") {
		name = ""
	}
	return []boundRole{{resource: resource, name: name}}
}

// refs are the names of the roles of one resource that bindings refer to; any is true when
// one of them is not known before render.
type refs struct {
	names map[string]bool
	any   bool
}

func refsOf(m map[string]*refs, resource string) *refs {
	if m[resource] == nil {
		m[resource] = &refs{names: map[string]bool{}}
	}
	return m[resource]
}

func (r *refs) add(name string) { r.names[name] = true }
