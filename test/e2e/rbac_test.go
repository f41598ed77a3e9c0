//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"metacel.dev/metacel/runtime/kinds"
	"metacel.dev/metacel/runtime/operator"
	"metacel.dev/metacel/runtime/policy"
	"metacel.dev/metacel/runtime/policystatus"
	"metacel.dev/metacel/runtime/rbac"
	"metacel.dev/metacel/runtime/source"
)

var tenantCRD = crdYAML("tenants", "Tenant", "Cluster", "team: {type: string, maxLength: 63}")

// tenantPolicy gives every Tenant a Namespace where its team may view everything.
const tenantPolicy = `apiVersion: metacel.dev/v1alpha1
kind: CompositePolicy
metadata:
  name: tenant
spec:
  parentResource: {apiVersion: e2e.metacel.dev/v1, resource: tenants}
  childResources:
    - {apiVersion: v1, resource: namespaces}
    - {apiVersion: rbac.authorization.k8s.io/v1, resource: rolebindings}
  children:
    - id: namespace
      template:
        apiVersion: v1
        kind: Namespace
        metadata: {name: "tenant-${parent.metadata.name}"}
    - id: viewers
      template:
        apiVersion: rbac.authorization.k8s.io/v1
        kind: RoleBinding
        metadata: {name: viewers, namespace: "tenant-${parent.metadata.name}"}
        roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: view}
        subjects: [{apiGroup: rbac.authorization.k8s.io, kind: Group, name: "${parent.spec.team}"}]
`

// TestRoleForBindingChildren runs a policy whose children are RoleBindings as a user holding only
// the role metacel rbac computes: the API server lets nobody grant what they do not hold, so the
// role needs bind on the bound ClusterRole, and only on it.
func TestRoleForBindingChildren(t *testing.T) {
	applyCRD(t, tenantCRD, "tenants.e2e.metacel.dev")
	t.Cleanup(func() { _, _ = kubectlCmd(context.Background(), "delete", "crd", "tenants.e2e.metacel.dev") })
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "tenant.yaml"), []byte(tenantPolicy), 0o644); err != nil {
		t.Fatal(err)
	}
	const user = "e2e-tenant-operator"
	grantRole(t, user, computedRole(t, dir, "e2e-tenant-operator"))

	t.Run("bind on the bound role only", func(t *testing.T) {
		for verb, want := range map[string]string{"clusterroles/view": "yes", "clusterroles/cluster-admin": "no", "roles/anything": "no"} {
			out, _ := kubectlCmd(t.Context(), "auth", "can-i", "--as", user, "bind", verb)
			if got := strings.TrimSpace(out); !strings.HasSuffix(got, want) {
				t.Errorf("can %s bind %s: %s, want %s", user, verb, got, want)
			}
		}
	})

	startRuntimeAs(t, user, operator.Options{PolicyDirs: []string{dir}})
	tenants := schema.GroupVersionResource{Group: "e2e.metacel.dev", Version: "v1", Resource: "tenants"}
	create(t, tenants, &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "e2e.metacel.dev/v1", "kind": "Tenant",
		"metadata": map[string]any{"name": "acme"},
		"spec":     map[string]any{"team": "acme-devs"},
	}})
	t.Cleanup(func() {
		_ = cluster.dynamic.Resource(tenants).Delete(context.Background(), "acme", metav1.DeleteOptions{})
	})
	rbGVR := schema.GroupVersionResource{Group: "rbac.authorization.k8s.io", Version: "v1", Resource: "rolebindings"}
	waitFor(t, rbGVR, "tenant-acme", "viewers", wait, func(rb *unstructured.Unstructured) error {
		subjects, _, _ := unstructured.NestedSlice(rb.Object, "subjects")
		if fmt.Sprint(subjects) != "[map[apiGroup:rbac.authorization.k8s.io kind:Group name:acme-devs]]" {
			return fmt.Errorf("subjects %v", subjects)
		}
		return nil
	})
	waitFor(t, tenants, "", "acme", wait, hasCondition("Ready", "True", "", ""))
}

// computedRole is what `metacel rbac` prints for the policies of dir.
func computedRole(t *testing.T, dir, name string) *rbacv1.ClusterRole {
	t.Helper()
	files, err := source.Files([]string{dir})
	if err != nil {
		t.Fatal(err)
	}
	catalog := kinds.NewCatalog()
	compiled, err := policy.LoadFiles(files, catalog)
	if err != nil {
		t.Fatal(err)
	}
	policies := make([]*policy.CompositePolicy, len(compiled))
	for i, c := range compiled {
		policies[i] = c.Policy
	}
	return rbac.ClusterRole(name, policies, func(gvr schema.GroupVersionResource) bool { _, ok := catalog.ForResource(gvr); return ok })
}

// grantRole creates a ClusterRole and binds it to user, until the test ends.
func grantRole(t *testing.T, user string, role *rbacv1.ClusterRole) {
	t.Helper()
	roles := cluster.kube.RbacV1().ClusterRoles()
	if _, err := roles.Create(t.Context(), role, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	binding := &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: role.Name},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role.Name},
		Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: user}},
	}
	if _, err := cluster.kube.RbacV1().ClusterRoleBindings().Create(t.Context(), binding, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cluster.kube.RbacV1().ClusterRoleBindings().Delete(context.Background(), role.Name, metav1.DeleteOptions{})
		_ = roles.Delete(context.Background(), role.Name, metav1.DeleteOptions{})
	})
}

// TestForbiddenPolicyIsReported runs a policy whose parents the runtime may not list: its caches
// never sync and it never runs, which a Warning event on its ConfigMap says, with the reason.
func TestForbiddenPolicyIsReported(t *testing.T) {
	const user = "e2e-no-widgets"
	grantRole(t, user, &rbacv1.ClusterRole{
		ObjectMeta: metav1.ObjectMeta{Name: user},
		Rules: []rbacv1.PolicyRule{
			{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: []string{"get", "list", "watch", "create", "patch"}},
			{APIGroups: []string{"events.k8s.io"}, Resources: []string{"events"}, Verbs: []string{"create", "patch"}},
			{APIGroups: []string{"apiextensions.k8s.io"}, Resources: []string{"customresourcedefinitions"}, Verbs: []string{"get", "list", "watch"}},
		},
	})
	policyNS := newNamespace(t, "forbidden-policies")
	cm := &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: "widget", Namespace: policyNS, Labels: map[string]string{"metacel.dev/policy": "true"}},
		Data:       map[string]string{"widget.yaml": readFile(t, filepath.Join("testdata", "policies", "resync", "widget.yaml"))},
	}
	applyConfigMap(t, cm)
	launchRuntime(t, user, operator.Options{PolicyNamespace: policyNS}) // it never gets ready
	if note := waitEvent(t, policyNS, "widget", "PolicyNotSynced"); !strings.Contains(note, "forbidden") || !strings.Contains(note, "widgets") {
		t.Errorf("the event must say which resource and why: %s", note)
	}
	waitStatus(t, policyNS, "widget", "the policy ConfigMap says NotSynced", inState(policystatus.NotSynced, "forbidden"))
}
