package policy

import (
	"regexp"
	"strings"
)

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
func RoleRefs(p *CompositePolicy, c Child) []BoundRole {
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
func specEnum(p *CompositePolicy, template string) []string {
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
				if f, ok := field["properties"].(Fields); ok {
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
