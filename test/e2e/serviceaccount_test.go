//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"os/exec"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"metacel.dev/metacel/runtime/operator"
)

var placersGVR = schema.GroupVersionResource{Group: "e2e.metacel.dev", Version: "v1", Resource: "placers"}

// placerPolicy puts a Pod in the namespace its parent names, with the parent's namespace's
// ConfigMap "settings" as an annotation: a policy whose confinement lets a parent reach anywhere,
// so that only its ServiceAccount's permissions stop it.
const placerPolicy = `apiVersion: metacel.dev/v1alpha1
kind: CompositePolicy
metadata:
  name: placer
spec:
  serviceAccountName: placer
  parentResource: {apiVersion: e2e.metacel.dev/v1, resource: placers}
  childResources:
    - {apiVersion: v1, resource: pods}
  confinement:
    childNamespaces: {names: ["*"]}
  related:
    - {id: settings, apiVersion: v1, resource: configmaps, name: settings}
  children:
    - id: pod
      crossNamespace: true
      template:
        apiVersion: v1
        kind: Pod
        metadata:
          name: "placed-${parent.metadata.name}"
          namespace: "${parent.spec.target}"
          annotations: {settings: "${related.?settings.?data.?value.orValue('none')}"}
        spec:
          containers: [{name: main, image: busybox}]
`

// TestPolicyActsAsItsServiceAccount runs a policy whose ServiceAccount may create Pods in one
// namespace only and read ConfigMaps in that namespace only, while the runtime itself may do
// anything: the API server must judge the policy's writes as its ServiceAccount's, and the runtime
// must not read for it what it may not read.
func TestPolicyActsAsItsServiceAccount(t *testing.T) {
	applyCRD(t, crdYAML("placers", "Placer", "Namespaced", "target: {type: string}"), "placers.e2e.metacel.dev")
	t.Cleanup(func() {
		_, _ = kubectlCmd(context.Background(), "delete", "crd", "placers.e2e.metacel.dev", "--wait=false")
	})
	policyNS, allowed, other := newNamespace(t, "policies"), newNamespace(t, "placer-allowed"), newNamespace(t, "placer-other")
	grantPlacer(t, policyNS, allowed)
	startRuntimeWith(t, operator.Options{PolicyNamespace: policyNS})
	t.Cleanup(func() { // while the runtime runs: it removes the cleanup finalizer of the parents
		for _, ns := range []string{allowed, other} {
			_, _ = kubectlCmd(context.Background(), "delete", "placers", "--all", "-n", ns, "--timeout=60s")
		}
	})
	for _, ns := range []string{allowed, other} {
		create(t, configMapsGVR, &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": "settings", "namespace": ns},
			"data": map[string]any{"value": "read-in-" + ns},
		}})
	}
	applyPolicyConfigMap(t, policyNS, "placer", placerPolicy)

	t.Run("a Pod where its ServiceAccount may create one is created", func(t *testing.T) {
		create(t, placersGVR, placer("here", allowed, allowed))
		waitFor(t, placersGVR, allowed, "here", wait, hasCondition("Synced", "True", "", ""))
		pod := waitFor(t, podsGVR, allowed, "placed-here", wait, func(*unstructured.Unstructured) error { return nil })
		expectEqual(t, "the Pod's annotation, from a ConfigMap it may read", pod.GetAnnotations()["settings"], "read-in-"+allowed)
	})
	t.Run("a Pod in kube-system is refused by the API server", func(t *testing.T) {
		create(t, placersGVR, placer("escalate", allowed, "kube-system"))
		waitFor(t, placersGVR, allowed, "escalate", wait, syncFailed("ApplyFailed",
			"forbidden", `"system:serviceaccount:`+policyNS+`:placer"`, `"kube-system"`))
		if pod, _ := get(t, podsGVR, "kube-system", "placed-escalate"); pod != nil {
			t.Error("the policy created a Pod in kube-system")
		}
	})
	t.Run("a ConfigMap its ServiceAccount may not read is not read for it", func(t *testing.T) {
		create(t, placersGVR, placer("snoop", other, allowed))
		waitFor(t, placersGVR, other, "snoop", wait, syncFailed("Forbidden",
			`ServiceAccount "`+policyNS+`/placer" may not get configmaps "settings" in namespace "`+other+`"`))
		if pod, _ := get(t, podsGVR, allowed, "placed-snoop"); pod != nil {
			t.Errorf("a Pod was written with what the policy may not read: %v", pod.GetAnnotations())
		}
	})
}

// grantPlacer creates the ServiceAccount placer in policyNS: it may read placers and Pods
// everywhere and write placers' status and finalizers, but create Pods and read ConfigMaps in
// namespace allowed only.
func grantPlacer(t *testing.T, policyNS, allowed string) {
	t.Helper()
	grantServiceAccount(t, policyNS, "placer", []rbacv1.PolicyRule{
		{APIGroups: []string{"e2e.metacel.dev"}, Resources: []string{"placers"}, Verbs: []string{"get", "list", "watch", "patch"}},
		{APIGroups: []string{"e2e.metacel.dev"}, Resources: []string{"placers/status"}, Verbs: []string{"patch"}},
		{APIGroups: []string{""}, Resources: []string{"pods"}, Verbs: []string{"get", "list", "watch"}},
	}, allowed, []rbacv1.PolicyRule{
		{APIGroups: []string{""}, Resources: []string{"pods"}, Verbs: []string{"create", "patch", "delete"}},
		{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: []string{"get", "list", "watch"}},
	})
}

// grantServiceAccount creates the ServiceAccount name in policyNS, with a ClusterRole of
// clusterRules and, in namespace, a Role of rules; the cluster-wide objects go when the test ends.
func grantServiceAccount(t *testing.T, policyNS, name string, clusterRules []rbacv1.PolicyRule, namespace string, rules []rbacv1.PolicyRule) {
	t.Helper()
	ctx := t.Context()
	subject := []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: name, Namespace: policyNS}}
	role := "e2e:" + policyNS + ":" + name
	createOrKeep(t, func() error {
		_, err := cluster.kube.CoreV1().ServiceAccounts(policyNS).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
		return err
	})
	createOrKeep(t, func() error {
		_, err := cluster.kube.RbacV1().ClusterRoles().Create(ctx, &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: role}, Rules: clusterRules}, metav1.CreateOptions{})
		return err
	})
	createOrKeep(t, func() error {
		_, err := cluster.kube.RbacV1().ClusterRoleBindings().Create(ctx, &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: role},
			RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role}, Subjects: subject}, metav1.CreateOptions{})
		return err
	})
	t.Cleanup(func() {
		_ = cluster.kube.RbacV1().ClusterRoleBindings().Delete(context.Background(), role, metav1.DeleteOptions{})
		_ = cluster.kube.RbacV1().ClusterRoles().Delete(context.Background(), role, metav1.DeleteOptions{})
	})
	createOrKeep(t, func() error {
		_, err := cluster.kube.RbacV1().Roles(namespace).Create(ctx, &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: name}, Rules: rules}, metav1.CreateOptions{})
		return err
	})
	createOrKeep(t, func() error {
		_, err := cluster.kube.RbacV1().RoleBindings(namespace).Create(ctx, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: name},
			RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: name}, Subjects: subject}, metav1.CreateOptions{})
		return err
	})
}

func placer(name, ns, target string) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "e2e.metacel.dev/v1", "kind": "Placer",
		"metadata": map[string]any{"name": name, "namespace": ns},
		"spec":     map[string]any{"target": target},
	}}
}

// applyPolicyConfigMap creates a policy's ConfigMap in the policy namespace.
func applyPolicyConfigMap(t *testing.T, policyNS, name, text string) {
	t.Helper()
	cm := &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: "policy-" + name, Namespace: policyNS, Labels: map[string]string{"metacel.dev/policy": "true"}},
		Data:       map[string]string{name + ".yaml": text},
	}
	if _, err := cluster.kube.CoreV1().ConfigMaps(policyNS).Create(t.Context(), cm, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// syncFailed checks that a parent reports Synced=False for reason, with a message saying each of
// says.
func syncFailed(reason string, says ...string) func(*unstructured.Unstructured) error {
	return func(p *unstructured.Unstructured) error {
		if err := hasCondition("Synced", "False", reason, "")(p); err != nil {
			return err
		}
		msg, _ := condition(p, "Synced")["message"].(string)
		for _, s := range says {
			if !strings.Contains(msg, s) {
				return fmt.Errorf("message %q does not say %q", msg, s)
			}
		}
		return nil
	}
}

// secretQuoterPolicy reads its parent's namespace's Secret db, and fails its validation with a
// message quoting the Secret's password: what a careless or hostile candidate would print.
const secretQuoterPolicy = `apiVersion: metacel.dev/v1alpha1
kind: CompositePolicy
metadata:
  name: quoter
spec:
  serviceAccountName: quoter
  parentResource: {apiVersion: e2e.metacel.dev/v1, resource: quoters}
  childResources:
    - {apiVersion: v1, resource: configmaps}
  related:
    - {id: db, apiVersion: v1, resource: secrets, name: db}
  validations:
    - expression: "!has(related.db)"
      messageExpression: "'the password is ' + related.db.data.password + ' or ' + string(base64.decode(related.db.data.password))"
  children:
    - id: copy
      template:
        apiVersion: v1
        kind: ConfigMap
        metadata: {name: "copy-${parent.metadata.name}"}
        data: {password: "${related.?db.?data.?password.orValue('')}"}
`

// TestPlanActsAsThePolicysServiceAccount plans a candidate that reads Secrets, as the policy's
// ServiceAccount: where it may not read them, the plan fails with the API server's Forbidden;
// where it may, the Secret's value never reaches the plan's output.
func TestPlanActsAsThePolicysServiceAccount(t *testing.T) {
	applyCRD(t, crdYAML("quoters", "Quoter", "Namespaced", "target: {type: string}"), "quoters.e2e.metacel.dev")
	t.Cleanup(func() {
		_, _ = kubectlCmd(context.Background(), "delete", "crd", "quoters.e2e.metacel.dev", "--wait=false")
	})
	policyNS, readable, unreadable := newNamespace(t, "policies"), newNamespace(t, "quoter-readable"), newNamespace(t, "quoter-unreadable")
	grantQuoter(t, policyNS, readable)
	const password = "hunter2-s3cret" // stored as aHVudGVyMi1zM2NyZXQ=
	for _, ns := range []string{readable, unreadable} {
		if _, err := cluster.kube.CoreV1().Secrets(ns).Create(t.Context(), &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "db"},
			StringData: map[string]string{"password": password}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	bin, file := buildMetacel(t), writeTemp(t, "quoter.yaml", []byte(secretQuoterPolicy))
	plan := func(t *testing.T) string {
		t.Helper()
		out, err := exec.CommandContext(t.Context(), bin, "plan", file, "--kubeconfig", cluster.kubeconfig, "--namespace", policyNS).CombinedOutput()
		if err == nil {
			t.Errorf("plan succeeded, want a failing parent (exit 1):\n%s", out)
		}
		for _, leak := range []string{password, "aHVudGVyMi1zM2NyZXQ="} {
			if strings.Contains(string(out), leak) {
				t.Errorf("the plan prints the Secret's data %q:\n%s", leak, out)
			}
		}
		return string(out)
	}

	t.Run("a Secret its ServiceAccount may not read fails the plan with Forbidden", func(t *testing.T) {
		create(t, quotersGVR, quoter(unreadable))
		t.Cleanup(func() {
			_ = cluster.dynamic.Resource(quotersGVR).Namespace(unreadable).Delete(context.Background(), "p", metav1.DeleteOptions{})
		})
		if out := plan(t); !strings.Contains(out, "forbidden") || !strings.Contains(out, `"system:serviceaccount:`+policyNS+`:quoter"`) {
			t.Errorf("the plan does not say the ServiceAccount may not read the Secret:\n%s", out)
		}
	})
	t.Run("a Secret it may read is redacted from the plan", func(t *testing.T) {
		create(t, quotersGVR, quoter(readable))
		t.Cleanup(func() {
			_ = cluster.dynamic.Resource(quotersGVR).Namespace(readable).Delete(context.Background(), "p", metav1.DeleteOptions{})
		})
		if out := plan(t); !strings.Contains(out, "the password is <redacted> or <redacted>") {
			t.Errorf("the plan does not show the failing validation, redacted:\n%s", out)
		}
	})
}

// grantQuoter creates the ServiceAccount quoter in policyNS: it may do what the quoter policy
// does, but read Secrets in namespace readable only.
func grantQuoter(t *testing.T, policyNS, readable string) {
	t.Helper()
	grantServiceAccount(t, policyNS, "quoter", []rbacv1.PolicyRule{
		{APIGroups: []string{"e2e.metacel.dev"}, Resources: []string{"quoters"}, Verbs: []string{"get", "list", "watch", "patch"}},
		{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: []string{"get", "list", "watch", "create", "patch", "delete"}},
	}, readable, []rbacv1.PolicyRule{
		{APIGroups: []string{""}, Resources: []string{"secrets"}, Verbs: []string{"get"}},
	})
}

var quotersGVR = schema.GroupVersionResource{Group: "e2e.metacel.dev", Version: "v1", Resource: "quoters"}

func quoter(ns string) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "e2e.metacel.dev/v1", "kind": "Quoter", "metadata": map[string]any{"name": "p", "namespace": ns},
	}}
}
