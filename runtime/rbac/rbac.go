package rbac

import (
	"slices"
	"sort"
	"strings"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"metacel.dev/metacel/runtime/policy"
)

// The verbs of each role a resource plays.
var (
	parentVerbs       = []string{"get", "list", "watch", "patch"} // patch: the cleanup finalizer
	parentStatusVerbs = []string{"patch"}                         // status is server-side applied
	// create: server-side apply of an object that does not exist yet creates it
	childVerbs   = []string{"get", "list", "watch", "create", "patch", "delete"}
	relatedVerbs = []string{"get", "list", "watch"} // also what the runtime reads into its caches
)

// ClusterRole returns a ClusterRole that lets a runtime run policies as itself: what those
// policies do (policyRole), and what the runtime needs for any policy (events, CRDs). Policies
// that name no ServiceAccount act as the runtime, so this is the runtime's role for them.
// builtIn tells the built-in resources, whose status metacel never writes.
func ClusterRole(name string, policies []*policy.CompositePolicy, builtIn func(schema.GroupVersionResource) bool) *rbacv1.ClusterRole {
	rules := ruleSet{}
	for _, p := range policies {
		rules.addPolicy(p, builtIn)
		if asksConsent(p.Spec.Confinement) { // namespaces' consent labels are read from a cache
			rules.add(schema.GroupResource{Resource: "namespaces"}, relatedVerbs...)
		}
	}
	rules.add(schema.GroupResource{Group: "events.k8s.io", Resource: "events"}, "create", "patch")
	rules.add(schema.GroupResource{Group: "apiextensions.k8s.io", Resource: "customresourcedefinitions"}, "get", "list", "watch")
	return clusterRole(name, slices.Concat(rules.rules(), escalationRules(policies), installRules(policies)))
}

// policyRole returns the ClusterRole of a ServiceAccount that policies act as: what those
// policies do, and nothing more. Parents: get, list, watch, and patch (the cleanup finalizer);
// their status: patch (server-side apply); children: get, list, watch, create, patch, delete;
// related objects: get, list, watch; bind and escalate for the roles RBAC children refer to;
// create and patch of the CRDs they install, by name.
func policyRole(name string, policies []*policy.CompositePolicy, builtIn func(schema.GroupVersionResource) bool) *rbacv1.ClusterRole {
	rules := ruleSet{}
	for _, p := range policies {
		rules.addPolicy(p, builtIn)
	}
	return clusterRole(name, slices.Concat(rules.rules(), escalationRules(policies), installRules(policies)))
}

// runtimeReads returns the ClusterRole of what the runtime reads for policies that act as their
// ServiceAccounts: get, list and watch of their parents, children and related objects (into the
// shared caches; each read for a policy is checked against its ServiceAccount), and of
// namespaces when a confinement asks for their consent.
func runtimeReads(name string, policies []*policy.CompositePolicy) *rbacv1.ClusterRole {
	rules := ruleSet{}
	for _, p := range policies {
		rules.addReads(p)
		if asksConsent(p.Spec.Confinement) {
			rules.add(schema.GroupResource{Resource: "namespaces"}, relatedVerbs...)
		}
	}
	return clusterRole(name, rules.rules())
}

func clusterRole(name string, rules []rbacv1.PolicyRule) *rbacv1.ClusterRole {
	return &rbacv1.ClusterRole{
		TypeMeta:   metav1.TypeMeta{APIVersion: "rbac.authorization.k8s.io/v1", Kind: "ClusterRole"},
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"app.kubernetes.io/name": "metacel"}},
		Rules:      rules,
	}
}

// addPolicy adds what a policy does: its writes and reads.
func (s ruleSet) addPolicy(p *policy.CompositePolicy, builtIn func(schema.GroupVersionResource) bool) {
	parent := gr(p.Spec.ParentResource.APIVersion, p.Spec.ParentResource.Resource)
	s.add(parent, parentVerbs...)
	if migrates(p) {
		s.add(parent, migrationVerbs...)
	}
	if gv, _ := schema.ParseGroupVersion(p.Spec.ParentResource.APIVersion); !builtIn(gv.WithResource(parent.Resource)) {
		s.add(schema.GroupResource{Group: parent.Group, Resource: parent.Resource + "/status"}, parentStatusVerbs...)
	}
	for _, c := range p.Spec.ChildResources {
		s.add(gr(c.APIVersion, c.Resource), childVerbs...)
	}
	for _, r := range p.Spec.Related {
		s.add(gr(r.APIVersion, r.Resource), relatedVerbs...)
	}
}

// migrationVerbs are what migrating stored parents to a new storage version takes: a no-op
// update of each (package storagemigration).
var migrationVerbs = []string{"update"}

// migrates reports whether a policy installs a CRD of several versions, whose stored parents the
// runtime migrates, as the policy, when its storage version changes.
func migrates(p *policy.CompositePolicy) bool {
	ps := p.Spec.ParentSchema
	return ps != nil && ps.Install && len(ps.Versions) > 0
}

// addReads adds what the runtime reads for a policy into its caches: parents, children, related.
func (s ruleSet) addReads(p *policy.CompositePolicy) {
	s.add(gr(p.Spec.ParentResource.APIVersion, p.Spec.ParentResource.Resource), relatedVerbs...)
	for _, c := range p.Spec.ChildResources {
		s.add(gr(c.APIVersion, c.Resource), relatedVerbs...)
	}
	for _, r := range p.Spec.Related {
		s.add(gr(r.APIVersion, r.Resource), relatedVerbs...)
	}
}

func gr(apiVersion, resource string) schema.GroupResource {
	gv, _ := schema.ParseGroupVersion(apiVersion) // validated when the policy loaded
	return schema.GroupResource{Group: gv.Group, Resource: resource}
}

// ruleSet unions verbs per group and resource.
type ruleSet map[schema.GroupResource]map[string]bool

func (s ruleSet) add(r schema.GroupResource, verbs ...string) {
	if s[r] == nil {
		s[r] = map[string]bool{}
	}
	for _, v := range verbs {
		s[r][v] = true
	}
}

// rules returns one rule per group and set of verbs, resources sorted: a stable, readable role.
func (s ruleSet) rules() []rbacv1.PolicyRule {
	type key struct{ group, verbs string }
	byKey := map[key]*rbacv1.PolicyRule{}
	var keys []key
	for r, vs := range s {
		verbs := sortedVerbs(vs)
		k := key{r.Group, strings.Join(verbs, ",")}
		if byKey[k] == nil {
			byKey[k] = &rbacv1.PolicyRule{APIGroups: []string{r.Group}, Verbs: verbs}
			keys = append(keys, k)
		}
		byKey[k].Resources = append(byKey[k].Resources, r.Resource)
	}
	sort.Slice(keys, func(i, j int) bool {
		if keys[i].group != keys[j].group {
			return keys[i].group < keys[j].group
		}
		return keys[i].verbs < keys[j].verbs
	})
	out := make([]rbacv1.PolicyRule, 0, len(keys))
	for _, k := range keys {
		r := byKey[k]
		sort.Strings(r.Resources)
		out = append(out, *r)
	}
	return out
}

// verbOrder lists verbs the way Kubernetes' own roles do.
var verbOrder = []string{"get", "list", "watch", "create", "update", "patch", "delete"}

func sortedVerbs(vs map[string]bool) []string {
	var out []string
	for _, v := range verbOrder {
		if vs[v] {
			out = append(out, v)
		}
	}
	return out
}

// asksConsent reports whether a confinement reads consent labels on namespaces.
func asksConsent(c *policy.Confinement) bool {
	return c != nil && (c.RelatedNamespaces != nil && c.RelatedNamespaces.ConsentLabel != "" ||
		c.ChildNamespaces != nil && c.ChildNamespaces.ConsentLabel != "")
}
