package rbac

import (
	"slices"

	rbacv1 "k8s.io/api/rbac/v1"

	"metacel.dev/metacel/runtime/policy"
)

// installVerbs are what installing a parent's CRD takes: a server-side apply, which creates the
// CRD when there is none (the API server then asks for create too, of that name).
var installVerbs = []string{"create", "patch"}

// installRules returns the rules that let policies install their parents' CRDs
// (spec.parentSchema.install): create and patch of those CRDs by name, and of no other, and for a
// CRD of several versions the update of its status that trims storedVersions after a migration.
// A policy that installs none adds nothing. The runtime reads CRDs itself (ClusterRole's get, list, watch).
func installRules(policies []*policy.CompositePolicy) []rbacv1.PolicyRule {
	var names, migrated []string
	for _, p := range policies {
		ps := p.Spec.ParentSchema
		if ps == nil || !ps.Install {
			continue
		}
		g := gr(p.Spec.ParentResource.APIVersion, p.Spec.ParentResource.Resource)
		name := g.Resource + "." + g.Group
		if !slices.Contains(names, name) {
			names = append(names, name)
		}
		if migrates(p) && !slices.Contains(migrated, name) {
			migrated = append(migrated, name)
		}
	}
	if len(names) == 0 {
		return nil
	}
	slices.Sort(names)
	out := []rbacv1.PolicyRule{{
		APIGroups: []string{"apiextensions.k8s.io"}, Resources: []string{"customresourcedefinitions"},
		Verbs: installVerbs, ResourceNames: names,
	}}
	if len(migrated) > 0 {
		slices.Sort(migrated)
		out = append(out, rbacv1.PolicyRule{
			APIGroups: []string{"apiextensions.k8s.io"}, Resources: []string{"customresourcedefinitions"},
			Verbs: []string{"get"}, ResourceNames: migrated,
		}, rbacv1.PolicyRule{
			APIGroups: []string{"apiextensions.k8s.io"}, Resources: []string{"customresourcedefinitions/status"},
			Verbs: trimVerbs, ResourceNames: migrated,
		}, rbacv1.PolicyRule{ // where the cluster serves them, the API server migrates (named as the CRD)
			APIGroups: []string{"storagemigration.k8s.io"}, Resources: []string{"storageversionmigrations"},
			Verbs: []string{"create"},
		}, rbacv1.PolicyRule{
			APIGroups: []string{"storagemigration.k8s.io"}, Resources: []string{"storageversionmigrations"},
			Verbs: []string{"get", "delete"}, ResourceNames: migrated,
		})
	}
	return out
}

// trimVerbs are what trimming a CRD's status.storedVersions after a migration takes.
var trimVerbs = []string{"update"}
