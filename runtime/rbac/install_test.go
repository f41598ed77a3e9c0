package rbac

import (
	"slices"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"metacel.dev/metacel/runtime/policy"
)

func TestInstallingPoliciesMayWriteTheirCRDsOnly(t *testing.T) {
	website := func(install bool, sa string) *policy.CompositePolicy {
		p := &policy.CompositePolicy{Metadata: policy.ObjectMeta{Name: "website"}}
		p.Spec.ServiceAccountName = sa
		p.Spec.ParentResource = policy.ParentResource{APIVersion: "example.com/v1", Resource: "websites"}
		p.Spec.ParentSchema = &policy.ParentSchema{Kind: "Website", Install: install}
		return p
	}
	crdRules := func(r *rbacv1.ClusterRole) []rbacv1.PolicyRule {
		var out []rbacv1.PolicyRule
		for _, rule := range r.Rules {
			if slices.Contains(rule.Resources, "customresourcedefinitions") && !slices.Contains(rule.Verbs, "watch") {
				out = append(out, rule)
			}
		}
		return out
	}
	builtIn := func(schema.GroupVersionResource) bool { return false }
	tests := []struct {
		name string
		role func(p *policy.CompositePolicy) *rbacv1.ClusterRole
		sa   string
	}{
		{name: "its ServiceAccount's role", sa: "website", role: func(p *policy.CompositePolicy) *rbacv1.ClusterRole {
			return ManifestsFor(Deployment{Prefix: "metacel", Namespace: "metacel-system"}, []*policy.CompositePolicy{p}, builtIn).Accounts[0].Role
		}},
		{name: "the runtime's role, for a policy acting as it", role: func(p *policy.CompositePolicy) *rbacv1.ClusterRole {
			return ManifestsFor(Deployment{Prefix: "metacel", Namespace: "metacel-system"}, []*policy.CompositePolicy{p}, builtIn).AsRuntime[0]
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := crdRules(tt.role(website(true, tt.sa)))
			want := []rbacv1.PolicyRule{{APIGroups: []string{"apiextensions.k8s.io"}, Resources: []string{"customresourcedefinitions"},
				Verbs: []string{"create", "patch"}, ResourceNames: []string{"websites.example.com"}}}
			if !slices.EqualFunc(got, want, func(a, b rbacv1.PolicyRule) bool {
				return slices.Equal(a.Verbs, b.Verbs) && slices.Equal(a.ResourceNames, b.ResourceNames) && slices.Equal(a.APIGroups, b.APIGroups)
			}) {
				t.Errorf("CRD write rules = %+v, want %+v", got, want)
			}
			if got := crdRules(tt.role(website(false, tt.sa))); len(got) != 0 {
				t.Errorf("without install: CRD write rules %+v, want none", got)
			}
		})
	}
}

func TestAPolicyOfSeveralParentVersionsMayMigrateItsStoredParents(t *testing.T) {
	p := &policy.CompositePolicy{Metadata: policy.ObjectMeta{Name: "cache"}}
	p.Spec.ServiceAccountName = "cache"
	p.Spec.ParentResource = policy.ParentResource{APIVersion: "example.com/v1", Resource: "caches"}
	p.Spec.ParentSchema = &policy.ParentSchema{Kind: "Cache", Install: true, Versions: []policy.ParentVersion{{Name: "v1alpha1"}}}
	role := ManifestsFor(Deployment{Prefix: "metacel", Namespace: "metacel-system"}, []*policy.CompositePolicy{p}, func(schema.GroupVersionResource) bool { return false }).Accounts[0].Role
	allows := func(group, resource, verb, name string) bool {
		return slices.ContainsFunc(role.Rules, func(r rbacv1.PolicyRule) bool {
			return slices.Contains(r.APIGroups, group) && slices.Contains(r.Resources, resource) && slices.Contains(r.Verbs, verb) &&
				(len(r.ResourceNames) == 0 || slices.Contains(r.ResourceNames, name))
		})
	}
	for _, want := range []struct{ group, resource, verb, name string }{
		{"example.com", "caches", "update", ""},                                            // the no-op updates
		{"apiextensions.k8s.io", "customresourcedefinitions", "get", "caches.example.com"}, // the migration's progress
		{"apiextensions.k8s.io", "customresourcedefinitions/status", "update", "caches.example.com"},
		{"storagemigration.k8s.io", "storageversionmigrations", "create", ""},
		{"storagemigration.k8s.io", "storageversionmigrations", "get", "caches.example.com"},
	} {
		if !allows(want.group, want.resource, want.verb, want.name) {
			t.Errorf("may not %s %s.%s %q", want.verb, want.resource, want.group, want.name)
		}
	}
	if allows("apiextensions.k8s.io", "customresourcedefinitions/status", "update", "other.example.com") {
		t.Error("may trim the stored versions of another CRD")
	}
}
