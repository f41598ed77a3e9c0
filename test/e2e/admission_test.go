//go:build e2e

package e2e

import (
	"fmt"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"metacel.dev/metacel/runtime/operator"
)

var (
	mutatingPoliciesGVR = schema.GroupVersionResource{Group: "admissionregistration.k8s.io", Version: "v1", Resource: "mutatingadmissionpolicies"}
	mutatingBindingsGVR = schema.GroupVersionResource{Group: "admissionregistration.k8s.io", Version: "v1", Resource: "mutatingadmissionpolicybindings"}
)

// pinnedImage is what the admission policy of these tests makes of the image "nginx".
const pinnedImage = "nginx@sha256:0000000000000000000000000000000000000000000000000000000000000000"

// pinImages has a MutatingAdmissionPolicy pin the image "nginx" of ConfigMaps in ns to a digest,
// as an image-pinning webhook does, and waits until the API server applies it.
func pinImages(t *testing.T, ns string) {
	t.Helper()
	name := "pin-" + ns
	policy := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "admissionregistration.k8s.io/v1", "kind": "MutatingAdmissionPolicy",
		"metadata": map[string]any{"name": name},
		"spec": map[string]any{
			"matchConstraints": map[string]any{
				"namespaceSelector": map[string]any{"matchLabels": map[string]any{"kubernetes.io/metadata.name": ns}},
				"resourceRules": []any{map[string]any{"apiGroups": []any{""}, "apiVersions": []any{"v1"},
					"operations": []any{"CREATE", "UPDATE"}, "resources": []any{"configmaps"}}},
			},
			"matchConditions":    []any{map[string]any{"name": "tagged", "expression": "has(object.data) && 'image' in object.data && object.data.image == 'nginx'"}},
			"failurePolicy":      "Fail",
			"reinvocationPolicy": "Never",
			"mutations": []any{map[string]any{"patchType": "ApplyConfiguration",
				"applyConfiguration": map[string]any{"expression": `Object{data: {"image": "` + pinnedImage + `"}}`}}},
		},
	}}
	bindMutatingPolicy(t, policy)
	probe := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "probe", Namespace: ns}, Data: map[string]string{"image": "nginx"}}
	eventually(t, time.Minute, "the admission policy pins images", func() error {
		got, err := cluster.kube.CoreV1().ConfigMaps(ns).Create(t.Context(), probe, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		if err != nil {
			return err
		}
		if got.Data["image"] != pinnedImage {
			return fmt.Errorf("image %q", got.Data["image"])
		}
		return nil
	})
}

// A mutating admission policy rewrites a field metacel sets in its own write (an image pinned to
// a digest): the child never holds what the policy says. The runtime does not fight it, and a
// runtime started again, with no memory of its writes, does not either: before, it applied the
// ConfigMap once more, and refused the immutable one as a change of the policy's (Synced=False).
func TestAFieldAdmissionRewritesIsNoFightAfterARestart(t *testing.T) {
	ns := newNamespace(t, "admitted")
	pinImages(t, ns)
	dir := writePolicy(t, `apiVersion: metacel.dev/v1alpha1
kind: CompositePolicy
metadata: {name: admitted}
spec:
  parentResource:
    apiVersion: e2e.metacel.dev/v1
    resource: widgets
    labelSelector: {matchLabels: {e2e.metacel.dev/test: `+ns+`}}
  childResources:
    - {apiVersion: v1, resource: configmaps}
  children:
    - id: app
      template: {apiVersion: v1, kind: ConfigMap, metadata: {name: "${parent.metadata.name}-app"}, data: {image: nginx}}
    - id: frozen
      template: {apiVersion: v1, kind: ConfigMap, metadata: {name: "${parent.metadata.name}-frozen"}, immutable: true, data: {image: nginx}}
`)
	opts := operator.Options{PolicyDirs: []string{dir}, PolicyNamespace: newNamespace(t, "policies")}
	first := startRuntimeWith(t, opts)
	w := widget(ns, "w")
	w.SetLabels(map[string]string{"e2e.metacel.dev/test": ns})
	create(t, widgetsGVR, w)
	waitFor(t, widgetsGVR, ns, "w", wait, hasCondition("Ready", "True", "", ""))
	uids := map[string]types.UID{}
	for _, name := range []string{"w-app", "w-frozen"} {
		cm := waitFor(t, configMapsGVR, ns, name, wait, func(o *unstructured.Unstructured) error {
			if got := str(o, "data", "image"); got != pinnedImage {
				return fmt.Errorf("image %q, want the admission policy's", got)
			}
			return nil
		})
		uids[name] = cm.GetUID()
	}
	settled(t, 3*time.Second, 2*time.Minute, quiet(first, ns))
	for name := range uids {
		if n := first.writesTo("/api/v1/namespaces/" + ns + "/configmaps/" + name); n > 0 {
			t.Errorf("the runtime applied %s %d more time(s) after creating it: it fought the admission policy", name, n)
		}
	}
	first.stop()

	// another writer touches the children (a label of its own): their new resourceVersions make
	// the next runtime render and decide, not trust the memo of the first
	for name := range uids {
		patch := []byte(`{"metadata":{"labels":{"touched":"yes"}}}`)
		if _, err := cluster.kube.CoreV1().ConfigMaps(ns).Patch(t.Context(), name, types.MergePatchType, patch, metav1.PatchOptions{FieldManager: "toucher"}); err != nil {
			t.Fatal(err)
		}
	}
	restartQuietly(t, opts, ns, "admitted")
	for name, uid := range uids {
		cm, err := get(t, configMapsGVR, ns, name)
		if err != nil {
			t.Fatal(err)
		}
		if cm.GetUID() != uid {
			t.Errorf("%s was replaced", name)
		}
	}
}

// renameSecretKeys has a MutatingAdmissionPolicy rename the key "password" of the first env var's
// secretKeyRef of the first container of Deployments in ns to "db-password", as a webhook that
// maps references to a platform's secrets does, and waits until the API server applies it. A
// secretKeyRef is one value to server-side apply (+structType=atomic): managed fields list none
// of its fields.
func renameSecretKeys(t *testing.T, ns string) {
	t.Helper()
	name := "rename-" + ns
	const ref = "object.spec.template.spec.containers[0].env[0].valueFrom.secretKeyRef"
	policy := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "admissionregistration.k8s.io/v1", "kind": "MutatingAdmissionPolicy",
		"metadata": map[string]any{"name": name},
		"spec": map[string]any{
			"matchConstraints": map[string]any{
				"namespaceSelector": map[string]any{"matchLabels": map[string]any{"kubernetes.io/metadata.name": ns}},
				"resourceRules": []any{map[string]any{"apiGroups": []any{"apps"}, "apiVersions": []any{"v1"},
					"operations": []any{"CREATE", "UPDATE"}, "resources": []any{"deployments"}}},
			},
			"matchConditions": []any{map[string]any{"name": "references-a-secret", "expression": "has(object.spec.template.spec.containers[0].env) && " +
				"has(object.spec.template.spec.containers[0].env[0].valueFrom) && has(" + ref + ") && " + ref + ".key == 'password'"}},
			"failurePolicy":      "Fail",
			"reinvocationPolicy": "Never",
			"mutations": []any{map[string]any{"patchType": "JSONPatch", "jsonPatch": map[string]any{"expression": `[JSONPatch{op: "replace", ` +
				`path: "/spec/template/spec/containers/0/env/0/valueFrom/secretKeyRef/key", value: "db-password"}]`}}},
		},
	}}
	bindMutatingPolicy(t, policy)
	probe := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "probe", Namespace: ns},
		Spec: appsv1.DeploymentSpec{
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "probe"}},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "probe"}},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "app:1", Env: []corev1.EnvVar{{Name: "PASSWORD",
					ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "db"}, Key: "password"}}}}}}},
			},
		},
	}
	eventually(t, time.Minute, "the admission policy renames secret keys", func() error {
		got, err := cluster.kube.AppsV1().Deployments(ns).Create(t.Context(), probe, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		if err != nil {
			return err
		}
		if key := got.Spec.Template.Spec.Containers[0].Env[0].ValueFrom.SecretKeyRef.Key; key != "db-password" {
			return fmt.Errorf("key %q", key)
		}
		return nil
	})
}

// A mutating admission policy rewrites a field inside an object the schema declares one value (a
// Deployment's env var's secretKeyRef, its key renamed): metacel's managed fields own the
// secretKeyRef whole and list none of its fields. The runtime does not fight the rewrite, before
// a restart or after: before, it applied the Deployment again at each sync, for ever. (A field
// admission only adds, or a zero the policy sets such as optional: false, was never fought.)
func TestARewriteInsideAnAtomicObjectIsNoFight(t *testing.T) {
	ns := newNamespace(t, "atomic")
	renameSecretKeys(t, ns)
	dir := writePolicy(t, `apiVersion: metacel.dev/v1alpha1
kind: CompositePolicy
metadata: {name: atomic}
spec:
  parentResource:
    apiVersion: e2e.metacel.dev/v1
    resource: widgets
    labelSelector: {matchLabels: {e2e.metacel.dev/test: `+ns+`}}
  childResources:
    - {apiVersion: apps/v1, resource: deployments}
  children:
    - id: app
      readyWhen: "true"
      template:
        apiVersion: apps/v1
        kind: Deployment
        metadata: {name: "${parent.metadata.name}-app"}
        spec:
          selector: {matchLabels: {app: "${parent.metadata.name}"}}
          template:
            metadata: {labels: {app: "${parent.metadata.name}"}}
            spec:
              containers:
                - name: app
                  image: app:1
                  env:
                    - name: PASSWORD
                      valueFrom: {secretKeyRef: {name: "${parent.metadata.name}-db", key: password}}
`)
	opts := operator.Options{PolicyDirs: []string{dir}, PolicyNamespace: newNamespace(t, "policies")}
	first := startRuntimeWith(t, opts)
	w := widget(ns, "w")
	w.SetLabels(map[string]string{"e2e.metacel.dev/test": ns})
	create(t, widgetsGVR, w)
	waitFor(t, widgetsGVR, ns, "w", wait, hasCondition("Synced", "True", "", ""))
	waitFor(t, deploymentsGVR, ns, "w-app", wait, func(o *unstructured.Unstructured) error {
		containers, _, _ := unstructured.NestedSlice(o.Object, "spec", "template", "spec", "containers")
		env, _, _ := unstructured.NestedSlice(containers[0].(map[string]any), "env")
		if key, _, _ := unstructured.NestedString(env[0].(map[string]any), "valueFrom", "secretKeyRef", "key"); key != "db-password" {
			return fmt.Errorf("secretKeyRef's key %q", key)
		}
		return nil
	})
	// the Deployment's controller writes its status meanwhile: each write syncs the widget again
	settled(t, 3*time.Second, 2*time.Minute, quiet(first, ns))
	if n := first.writesTo("/apis/apps/v1/namespaces/" + ns + "/deployments/w-app"); n > 0 {
		t.Errorf("the runtime applied the Deployment %d more time(s) after creating it: it fought the admission policy", n)
	}
	first.stop()

	// another writer touches the Deployment: its new resourceVersion makes the next runtime render
	// and decide, not trust the memo of the first
	patch := []byte(`{"metadata":{"labels":{"touched":"yes"}}}`)
	if _, err := cluster.kube.AppsV1().Deployments(ns).Patch(t.Context(), "w-app", types.MergePatchType, patch, metav1.PatchOptions{FieldManager: "toucher"}); err != nil {
		t.Fatal(err)
	}
	restartQuietly(t, opts, ns, "atomic")
}

// bindMutatingPolicy creates a MutatingAdmissionPolicy and its binding (of the policy's name),
// deleted when the test ends.
func bindMutatingPolicy(t *testing.T, policy *unstructured.Unstructured) {
	t.Helper()
	name := policy.GetName()
	binding := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "admissionregistration.k8s.io/v1", "kind": "MutatingAdmissionPolicyBinding",
		"metadata": map[string]any{"name": name}, "spec": map[string]any{"policyName": name},
	}}
	for _, o := range []struct {
		gvr schema.GroupVersionResource
		obj *unstructured.Unstructured
	}{{mutatingPoliciesGVR, policy}, {mutatingBindingsGVR, binding}} {
		if _, err := cluster.dynamic.Resource(o.gvr).Create(t.Context(), o.obj, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			_ = cluster.dynamic.Resource(o.gvr).Delete(t.Context(), name, metav1.DeleteOptions{})
		})
	}
}

// restartQuietly starts the runtime of opts again, waits until it has rendered the policy's
// widget ns/w, and checks that it wrote nothing to ns meanwhile and that the widget is Synced.
func restartQuietly(t *testing.T, opts operator.Options, ns, policyName string) {
	t.Helper()
	second := startRuntimeWith(t, opts)
	stillQuiet := quiet(second, ns)
	eventually(t, wait, "the restarted runtime synced the widget", func() error {
		if err := stillQuiet(); err != nil {
			t.Fatalf("the restarted runtime writes: %v", err)
		}
		if got := second.renders(policyName); got < 1 {
			return fmt.Errorf("%d renders", got)
		}
		return nil
	})
	if err := stillQuiet(); err != nil {
		t.Errorf("the restarted runtime writes: %v", err)
	}
	got, err := get(t, widgetsGVR, ns, "w")
	if err != nil {
		t.Fatal(err)
	}
	if err := hasCondition("Synced", "True", "", "")(got); err != nil {
		t.Errorf("after the restart: %v", err)
	}
}
