//go:build e2e

package e2e

import (
	"context"
	"testing"

	authenticationv1 "k8s.io/api/authentication/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes"

	"metacel.dev/metacel/runtime/kinds"
	"metacel.dev/metacel/runtime/policy"
	"metacel.dev/metacel/runtime/rbac"
	"metacel.dev/metacel/runtime/source"
)

// grantPolicies creates, in namespace, the ServiceAccounts that the policies of paths act as,
// with what `metacel rbac` grants them, as a user deploying them would; the cluster-wide objects
// go when the test ends. The runtime of a test is the cluster admin: what it reads for them
// needs no grant.
func grantPolicies(t testing.TB, namespace string, paths ...string) {
	t.Helper()
	grantPoliciesOn(t, cluster.kube, namespace, paths...)
}

// grantPoliciesOn is grantPolicies on the cluster of kube.
func grantPoliciesOn(t testing.TB, kube kubernetes.Interface, namespace string, paths ...string) {
	t.Helper()
	files, err := source.Files(paths)
	if err != nil {
		t.Fatal(err)
	}
	catalog := kinds.NewCatalog()
	compiled, err := policy.LoadFiles(files, catalog)
	if err != nil {
		t.Fatal(err)
	}
	var policies []*policy.CompositePolicy
	for _, c := range compiled {
		policies = append(policies, c.Policy)
	}
	grantCompositePolicies(t, kube, namespace, policies, func(gvr schema.GroupVersionResource) bool { _, ok := catalog.ForResource(gvr); return ok })
}

// grantCompositePolicies creates the ServiceAccounts of policies in namespace with their RBAC.
func grantCompositePolicies(t testing.TB, kube kubernetes.Interface, namespace string, policies []*policy.CompositePolicy, builtIn func(schema.GroupVersionResource) bool) {
	t.Helper()
	m := rbac.ManifestsFor(rbac.Deployment{Prefix: "e2e", Namespace: namespace}, policies, builtIn)
	ctx := t.Context()
	for _, a := range m.Accounts {
		createOrKeep(t, func() error {
			_, err := kube.CoreV1().ServiceAccounts(namespace).Create(ctx, a.ServiceAccount, metav1.CreateOptions{})
			return err
		})
		createOrKeep(t, func() error {
			_, err := kube.RbacV1().ClusterRoles().Create(ctx, a.Role, metav1.CreateOptions{})
			return err
		})
		createOrKeep(t, func() error {
			_, err := kube.RbacV1().ClusterRoleBindings().Create(ctx, a.Binding, metav1.CreateOptions{})
			return err
		})
		name := a.Role.Name
		t.Cleanup(func() {
			_ = kube.RbacV1().ClusterRoleBindings().Delete(context.Background(), name, metav1.DeleteOptions{})
			_ = kube.RbacV1().ClusterRoles().Delete(context.Background(), name, metav1.DeleteOptions{})
		})
	}
}

func createOrKeep(t testing.TB, create func() error) {
	t.Helper()
	if err := create(); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
}

// serviceAccountToken is a token of a ServiceAccount, for a client authenticated as it rather than
// impersonating it: what a Pod running as it has (a client impersonating the runtime's account
// could not impersonate a policy's in turn).
func serviceAccountToken(t testing.TB, namespace, name string) string {
	t.Helper()
	req := &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: new(int64(3600))}}
	tr, err := cluster.kube.CoreV1().ServiceAccounts(namespace).CreateToken(t.Context(), name, req, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return tr.Status.Token
}
