package rbac

import (
	"maps"
	"slices"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"metacel.dev/metacel/runtime/policy"
)

// aggregateToRuntime is the label of the ClusterRoles that the runtime's ClusterRole aggregates
// (deploy/rbac/clusterrole.yaml): what it reads for each policy, and, for a policy that acts as
// the runtime, what that policy does. Each policy's ClusterRoles are objects of their own, so
// that applying one policy's RBAC adds to the runtime's permissions, never replaces them.
const aggregateToRuntime = "rbac.metacel.dev/aggregate-to-runtime"

// Deployment says where the policies' ServiceAccounts are.
type Deployment struct {
	// Prefix begins the names of the cluster-wide objects (metacel).
	Prefix string
	// Namespace is the policy namespace: the policies' ServiceAccounts live there.
	Namespace string
}

// Manifests are the RBAC objects of a set of policies, in the order to apply them.
type Manifests struct {
	// Accounts are, per ServiceAccount that policies act as, that account, its ClusterRole
	// (policyRole), the binding of one to the other, and what the runtime reads for them.
	Accounts []AccountAccess
	// AsRuntime are the ClusterRoles of the policies that name no ServiceAccount, one each,
	// aggregated into the runtime's: they act as the runtime.
	AsRuntime []*rbacv1.ClusterRole
}

// AccountAccess is one ServiceAccount that policies act as, with what they may do.
type AccountAccess struct {
	Policies       []string
	ServiceAccount *corev1.ServiceAccount
	Role           *rbacv1.ClusterRole
	Binding        *rbacv1.ClusterRoleBinding
	// RuntimeReads is aggregated into the runtime's ClusterRole
	RuntimeReads *rbacv1.ClusterRole
}

// ManifestsFor returns the RBAC objects of policies deployed as d says.
func ManifestsFor(d Deployment, policies []*policy.CompositePolicy, builtIn func(schema.GroupVersionResource) bool) Manifests {
	var m Manifests
	bySA := map[string][]*policy.CompositePolicy{}
	for _, p := range policies {
		if sa := p.Spec.ServiceAccountName; sa != "" {
			bySA[sa] = append(bySA[sa], p)
			continue
		}
		role := ClusterRole(d.Prefix+":as-runtime:"+p.Metadata.Name, []*policy.CompositePolicy{p}, builtIn)
		m.AsRuntime = append(m.AsRuntime, aggregated(role))
	}
	for _, sa := range slices.Sorted(maps.Keys(bySA)) {
		m.Accounts = append(m.Accounts, accountAccess(d, sa, bySA[sa], builtIn))
	}
	return m
}

// Objects lists the manifests in the order to apply them.
func (m Manifests) Objects() []any {
	var out []any
	for _, a := range m.Accounts {
		out = append(out, a.ServiceAccount, a.Role, a.Binding, a.RuntimeReads)
	}
	for _, r := range m.AsRuntime {
		out = append(out, r)
	}
	return out
}

// accountRoleName is the name of the ClusterRole (and of its binding) of a ServiceAccount that
// policies act as: the namespace is part of it, as ClusterRoles are cluster-wide.
func accountRoleName(d Deployment, serviceAccount string) string {
	return d.Prefix + ":" + d.Namespace + ":" + serviceAccount
}

func accountAccess(d Deployment, sa string, policies []*policy.CompositePolicy, builtIn func(schema.GroupVersionResource) bool) AccountAccess {
	name := accountRoleName(d, sa)
	a := AccountAccess{
		ServiceAccount: &corev1.ServiceAccount{
			TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "ServiceAccount"},
			ObjectMeta: objectMeta(sa, d.Namespace),
			// a policy's ServiceAccount is impersonated, never mounted
			AutomountServiceAccountToken: new(false),
		},
		Role: policyRole(name, policies, builtIn),
		Binding: &rbacv1.ClusterRoleBinding{
			TypeMeta:   metav1.TypeMeta{APIVersion: "rbac.authorization.k8s.io/v1", Kind: "ClusterRoleBinding"},
			ObjectMeta: objectMeta(name, ""),
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: name},
			Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: sa, Namespace: d.Namespace}},
		},
		RuntimeReads: aggregated(runtimeReads(name+":reads", policies)),
	}
	for _, p := range policies {
		a.Policies = append(a.Policies, p.Metadata.Name)
	}
	return a
}

// aggregated labels a ClusterRole to be aggregated into the runtime's.
func aggregated(r *rbacv1.ClusterRole) *rbacv1.ClusterRole {
	r.Labels[aggregateToRuntime] = "true"
	return r
}

func objectMeta(name, namespace string) metav1.ObjectMeta {
	return metav1.ObjectMeta{Name: name, Namespace: namespace, Labels: map[string]string{"app.kubernetes.io/name": "metacel"}}
}
