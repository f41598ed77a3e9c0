package rbac

import (
	"maps"
	"regexp"
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
// whose roleRef is written literally in a template is bound by name, as is one whose name is a
// parent's field bounded by an enum (RoleRefs); one whose name is otherwise templated needs bind
// on every role of its kind; an expression child, on every role.
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
			for _, r := range RoleRefs(p, c) {
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

// BoundRole is what a binding child may refer to: roles of a resource (roles, clusterroles),
// Names of them, or any (nil Names) when the name is not known before render.
type BoundRole struct {
	Resource string
	Names    []string
}

// RoleRefs reads the roles a child of p may bind: the literal roleRef of a binding template; one
// whose name is exactly a field of the parent's spec that the policy's parentSchema bounds by an
// enum, those names; any role of the kinds it may refer to when the kind or the name is
// otherwise templated (a ClusterRoleBinding binds ClusterRoles only). An expression child may be
// any binding.
func RoleRefs(p *policy.CompositePolicy, c policy.Child) []BoundRole {
	every := []BoundRole{{Resource: "roles"}, {Resource: "clusterroles"}}
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
	if !strings.Contains(name, "${") {
		return []BoundRole{{Resource: resource, Names: []string{name}}}
	}
	return []BoundRole{{Resource: resource, Names: specEnum(p, name)}}
}

// specField matches a template that is exactly one field of the parent's spec.
var specField = regexp.MustCompile(`^\$\{\s*parent\.spec\.([A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*)\s*\}$`)

// specEnum is the enum of string values the policy's parentSchema declares for the field of the
// parent's spec that template is exactly, nil when it is not one or declares none.
func specEnum(p *policy.CompositePolicy, template string) []string {
	m := specField.FindStringSubmatch(template)
	if m == nil || p.Spec.ParentSchema == nil {
		return nil
	}
	fields := map[string]any(p.Spec.ParentSchema.Spec)
	path := strings.Split(m[1], ".")
	for i, name := range path {
		field, _ := fields[name].(map[string]any)
		if i < len(path)-1 {
			fields, _ = field["properties"].(map[string]any)
			if fields == nil {
				if f, ok := field["properties"].(policy.Fields); ok {
					fields = f
				}
			}
			continue
		}
		var out []string
		values, _ := field["enum"].([]any)
		for _, v := range values {
			str, ok := v.(string)
			if !ok {
				return nil
			}
			out = append(out, str)
		}
		return out
	}
	return nil
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
