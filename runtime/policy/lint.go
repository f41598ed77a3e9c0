package policy

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"

	"metacel.dev/metacel/runtime/fieldpath"
)

// Finding is what Lint finds in a valid policy: not an error, since the policy loads and runs,
// but a hazard its author likely did not mean, located as a FieldError is.
type Finding struct {
	File string
	Line int
	// Path is the field path inside the policy document, e.g. spec.children[0].template.kind.
	Path string
	Msg  string
}

// String reads file:line: field.path: warning: message.
func (f Finding) String() string {
	return fmt.Sprintf("%s:%d: %s: warning: %s", f.File, f.Line, f.Path, f.Msg)
}

// Lint returns the findings of a compiled policy, in the order of its lines. It finds the
// binding children through which whoever may create a namespaced parent grants more than the
// parent's namespace: a ClusterRoleBinding, which grants cluster-wide; a binding whose
// ClusterRole the parent chooses (any the policy's ServiceAccount may bind: cluster-admin, if it
// may bind every one); a crossNamespace RoleBinding to a ClusterRole that writes (cluster-admin,
// admin, edit) in namespaces the policy's confinement does not bound. And it finds what the API
// server accepts without a word but does not do what the template says (lintobjects.go): a
// Secret key in both data and stringData; an HPA whose scaleTargetRef names no child of the
// policy; a workload child an HPA scales that still sets spec.replicas. And a parent CRD whose
// status.conditions is no map list keyed by type, where the conditions metacel writes replace
// every other controller's. And a Job the TTL controller deletes (created again, it runs again),
// a StatefulSet whose name leaves its Pods no room for their revision label.
func Lint(c *Compiled) []Finding {
	out := slices.Concat(bindingFindings(c), secretFindings(c), scaleFindings(c), conditionsFindings(c), jobFindings(c))
	slices.SortStableFunc(out, func(a, b Finding) int { return cmp.Compare(a.Line, b.Line) })
	return out
}

// bindingFindings are the findings of Lint about binding children, one per child at most.
func bindingFindings(c *Compiled) []Finding {
	if !c.Parent.Namespaced || !writesBindings(c.Policy) {
		return nil // a cluster-scoped parent's author is cluster-wide already; the policy writes no binding
	}
	var out []Finding
	for i, child := range c.Policy.Spec.Children {
		path := fieldpath.Index("spec.children", i)
		kind, _ := child.Template["kind"].(string)
		for _, r := range RoleRefs(c.Policy, child) {
			switch {
			case kind == "ClusterRoleBinding":
				role := "the ClusterRole it names"
				if len(r.Names) == 1 {
					role = "ClusterRole " + r.Names[0]
				}
				out = append(out, c.finding(path+".template.kind", "a ClusterRoleBinding child of a namespaced parent: whoever may create a parent grants "+
					"%s cluster-wide; bind in the parent's namespace with a RoleBinding instead", role))
			case r.Resource == "clusterroles" && r.Names == nil:
				out = append(out, c.finding(path+".template.roleRef.name", "whoever may create a parent chooses which ClusterRole this binding grants (any "+
					"the policy's ServiceAccount may bind: cluster-admin, if it may bind every one); name the role literally, or bound the "+
					"parent's field by an enum in parentSchema, which metacel rbac turns into the only names it may bind"))
			case r.Resource == "clusterroles" && child.CrossNamespace && !confinesChildren(c.Policy.Spec.Confinement) && slices.ContainsFunc(r.Names, writesEverything):
				roles := strings.Join(r.Names, ", ")
				out = append(out, c.finding(path+".template.roleRef.name", "a crossNamespace binding to ClusterRole %s with no confinement: whoever may create a parent "+
					"grants %s in any namespace the parent names; bound the namespaces in spec.confinement.childNamespaces (names, an expression "+
					"or a consentLabel), or bind in the parent's namespace (crossNamespace: false)", roles, roles))
			default:
				continue
			}
			break
		}
	}
	return out
}

// writesBindings reports whether a policy's children may be bindings: whether its childResources
// allow RoleBindings or ClusterRoleBindings (an expression child may be any child they allow).
func writesBindings(p *CompositePolicy) bool {
	return slices.ContainsFunc(p.Spec.ChildResources, func(r ChildResource) bool {
		return strings.HasPrefix(r.APIVersion, "rbac.authorization.k8s.io/") && (r.Resource == "rolebindings" || r.Resource == "clusterrolebindings")
	})
}

// finding is a Finding at path of the policy's source.
func (c *Compiled) finding(path, format string, args ...any) Finding {
	f := Finding{Path: path, Msg: fmt.Sprintf(format, args...)}
	if c.Source != nil {
		f.File, f.Line = c.Source.File, c.Source.LineOf(path)
	}
	return f
}

// conditionsFindings is the finding of Lint about the parent's CRD: status.conditions declared as
// a list that is not a map list keyed by type, or not declared under a status that keeps unknown
// fields (x-kubernetes-preserve-unknown-fields), which types it as no list at all. metacel applies the parent's status with its
// conditions (Synced, Ready, the policy's): server-side apply then owns such a list whole, so the
// conditions another controller or a user sets there are removed at every sync.
func conditionsFindings(c *Compiled) []Finding {
	s := c.Parent.Schema
	if s == nil {
		return nil
	}
	status, ok := s.Properties["status"]
	if !ok {
		return nil
	}
	conds, declared := status.Properties["conditions"]
	switch {
	case !declared && !preservesUnknown(status): // no conditions are stored: the API server prunes them
		return nil
	case declared && conds.Type != "array" && !preservesUnknown(conds):
		return nil
	case declared && conds.XListType != nil && *conds.XListType == "map" && slices.Equal(conds.XListMapKeys, []string{"type"}):
		return nil
	}
	return []Finding{c.finding("spec.parentResource", "the parent's CRD declares status.conditions as a list that is not a map list keyed by type: "+
		"the conditions metacel writes (Synced, Ready) replace the whole list, removing those other controllers set; "+
		"declare it with x-kubernetes-list-type: map and x-kubernetes-list-map-keys: [type], as metav1.Condition lists are")}
}

// preservesUnknown reports whether a schema keeps the fields it does not declare.
func preservesUnknown(s apiextensionsv1.JSONSchemaProps) bool {
	return s.XPreserveUnknownFields != nil && *s.XPreserveUnknownFields
}

// writesEverything reports whether a ClusterRole is one of Kubernetes' roles that write most of
// a namespace (RoleBindings included, for admin and cluster-admin).
func writesEverything(role string) bool {
	return role == "cluster-admin" || role == "admin" || role == "edit"
}

// confinesChildren reports whether a confinement bounds the namespaces crossNamespace children are
// written to: by names other than "*", an expression, or a consent label.
func confinesChildren(c *Confinement) bool {
	if c == nil || c.ChildNamespaces == nil {
		return false
	}
	r := c.ChildNamespaces
	return r.Expression != "" || r.ConsentLabel != "" || (len(r.Names) > 0 && !slices.Contains(r.Names, "*"))
}
