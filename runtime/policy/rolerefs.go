package policy

import (
	"regexp"
	"slices"
	"strings"
)

// BoundRole is what a binding child may refer to: roles of a resource (roles, clusterroles),
// Names of them, or any (nil Names) when the name is not known before render.
type BoundRole struct {
	Resource string
	Names    []string
}

// RoleRefs reads the roles a child of p may bind: the literal roleRef of a binding template; one
// whose name is exactly a field that the policy's parentSchema bounds by an enum, those names;
// any role of the kinds it may refer to when the kind or the name is otherwise templated (a
// ClusterRoleBinding binds ClusterRoles only). The field may be reached through a variable or a
// forEach item (enumPath): ${parent.spec.role}, ${variables.role} where variables.role is
// parent.spec.role, ${each.role} where forEach is parent.spec.members. An expression child may be
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
	return []BoundRole{{Resource: resource, Names: templateEnum(p, c, name)}}
}

// selectors matches a CEL expression that is exactly a chain of field selections
// (parent.spec.role), or of optional ones ending in .orValue([]) (parent.spec.?members.orValue([]):
// an empty list adds no value): the chain is its first group, the .orValue([]) its second.
var selectors = regexp.MustCompile(`^\s*([A-Za-z_]\w*(?:\.\??[A-Za-z_]\w*)*)(\.orValue\(\s*\[\s*\]\s*\))?\s*$`)

// wholeTemplate matches a template that is one ${} expression, which is its first group.
var wholeTemplate = regexp.MustCompile(`^\$\{([^}]*)\}$`)

// itemsStep is the step of a spec path into a list's items.
const itemsStep = "[]"

// templateEnum is the enum of string values the policy's parentSchema declares for the field
// that template is exactly (specPath), nil when it is not one or declares none.
func templateEnum(p *CompositePolicy, c Child, template string) []string {
	m := wholeTemplate.FindStringSubmatch(template)
	if m == nil || p.Spec.ParentSchema == nil {
		return nil
	}
	path, ok := specPath(p, c, m[1], len(p.Spec.Variables)+1)
	if !ok {
		return nil
	}
	return enumAt(p.Spec.ParentSchema.Spec, path)
}

// specPath turns a CEL expression of c that is exactly a field of the parent's spec into its path
// under spec, itemsStep for a list's items: parent.spec.a.b is [a b]; variables.v.b, v's path
// followed by b; each.b (c's forEach item), the forEach list's path, itemsStep, b. depth bounds
// how many variables one path may go through. ok is false for any other expression.
func specPath(p *CompositePolicy, c Child, expression string, depth int) (path []string, ok bool) {
	m := selectors.FindStringSubmatch(expression)
	if m == nil || depth < 0 {
		return nil, false
	}
	if strings.Contains(m[1], "?") && m[2] == "" {
		return nil, false // an optional, not a value
	}
	names := strings.Split(strings.ReplaceAll(m[1], "?", ""), ".")
	switch {
	case len(names) >= 2 && names[0] == "parent" && names[1] == "spec":
		return names[2:], true
	case len(names) >= 2 && names[0] == "variables":
		i := slices.IndexFunc(p.Spec.Variables, func(v Variable) bool { return v.Name == names[1] })
		if i < 0 {
			return nil, false
		}
		base, ok := specPath(p, Child{}, p.Spec.Variables[i].Expression, depth-1)
		return append(base, names[2:]...), ok
	case names[0] == "each" && c.ForEach != "":
		list, ok := specPath(p, Child{}, c.ForEach, depth) // Child{}: no each in a forEach
		return append(append(list, itemsStep), names[1:]...), ok
	}
	return nil, false
}

// enumAt is the enum of string values declared for the field at path (specPath's) of fields, nil
// when there is no such field or it declares no enum of strings.
func enumAt(fields Fields, path []string) []string {
	var field map[string]any
	for i, step := range path {
		if step == itemsStep {
			field = asMap(field["items"])
		} else {
			if i > 0 {
				fields = asMap(field["properties"])
			}
			field = asMap(fields[step])
		}
		if field == nil {
			return nil
		}
	}
	values, _ := field["enum"].([]any)
	var out []string
	for _, v := range values {
		str, ok := v.(string)
		if !ok {
			return nil
		}
		out = append(out, str)
	}
	return out
}

// asMap is a declared field or a set of fields as a map, nil when it is neither (a type name).
func asMap(v any) map[string]any {
	switch v := v.(type) {
	case map[string]any:
		return v
	case Fields:
		return v
	}
	return nil
}
