package rbac

import (
	"slices"

	rbacv1 "k8s.io/api/rbac/v1"

	"metacel.dev/metacel/runtime/policy"
)

// installVerbs are what installing a parent's CRD takes: a server-side apply, which creates the
// CRD when there is none (the API server then asks for create too, of that name).
var installVerbs = []string{"create", "patch"}

// installRules returns the rule that lets policies install their parents' CRDs
// (spec.parentSchema.install): create and patch of those CRDs by name, and of no other. A policy
// that installs none adds nothing. The runtime reads CRDs itself (ClusterRole's get, list, watch).
func installRules(policies []*policy.CompositePolicy) []rbacv1.PolicyRule {
	var names []string
	for _, p := range policies {
		ps := p.Spec.ParentSchema
		if ps == nil || !ps.Install {
			continue
		}
		g := gr(p.Spec.ParentResource.APIVersion, p.Spec.ParentResource.Resource)
		if name := g.Resource + "." + g.Group; !slices.Contains(names, name) {
			names = append(names, name)
		}
	}
	if len(names) == 0 {
		return nil
	}
	slices.Sort(names)
	return []rbacv1.PolicyRule{{
		APIGroups: []string{"apiextensions.k8s.io"}, Resources: []string{"customresourcedefinitions"},
		Verbs: installVerbs, ResourceNames: names,
	}}
}
