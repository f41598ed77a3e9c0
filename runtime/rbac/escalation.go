package rbac

import (
	"maps"
	"slices"

	rbacv1 "k8s.io/api/rbac/v1"

	"metacel.dev/metacel/runtime/policy"
)

// The API server refuses to let anyone grant permissions they do not hold: creating a binding
// needs the verb bind on the role it refers to, and creating a role needs the verb escalate (or
// holding every permission in it). A policy whose children are bindings or roles needs those.

const rbacGroup = "rbac.authorization.k8s.io"

// escalationRules returns the bind and escalate rules of the policies' RBAC children. A binding
// whose roleRef is written literally in a template is bound by name, as is one whose name is a
// parent's field bounded by an enum, directly or through a variable or a forEach item
// (policy.RoleRefs); one whose name is otherwise templated needs bind on every role of its kind;
// an expression child, on every role.
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
			for _, r := range policy.RoleRefs(p, c) {
				if r.Names == nil {
					refsOf(bind, r.Resource).any = true
				}
				for _, n := range r.Names {
					refsOf(bind, r.Resource).add(n)
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
