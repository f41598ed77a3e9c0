//go:build e2e

package e2e

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/rand"
	"sigs.k8s.io/yaml"

	"metacel.dev/metacel/runtime/contract"
	"metacel.dev/metacel/runtime/operator"
	"metacel.dev/metacel/runtime/policy"
)

// gizmoPolicy is a policy that installs the CRD of its parent, Gizmo, in group; extraSpec and
// extraStatus are more lines of parentSchema.spec and of the policy's status; annotations, when
// not empty, is the policy's metadata.annotations line.
func gizmoPolicy(group, annotations string, specFields []string, status []string) string {
	indent := func(lines []string, n int) string {
		var b strings.Builder
		for _, l := range lines {
			b.WriteString(strings.Repeat(" ", n) + l + "\n")
		}
		return b.String()
	}
	return `apiVersion: metacel.dev/v1alpha1
kind: CompositePolicy
metadata:
  name: gizmo-` + group[:8] + `
` + annotations + `spec:
  serviceAccountName: gizmo
  parentResource: {apiVersion: ` + group + `/v1, resource: gizmos}
  parentSchema:
    install: true
    kind: Gizmo
    spec:
` + indent(specFields, 6) + `    status:
      summary: string
  childResources: [{apiVersion: v1, resource: configmaps}]
  children:
    - id: summary
      template:
        apiVersion: v1
        kind: ConfigMap
        metadata: {name: "${parent.metadata.name}-summary"}
        data:
` + indent(status, 10) + `  status:
    summary: "${parent.metadata.name}"
`
}

// TestOnePolicyApplyIsOneOperator: a policy ConfigMap that installs its parent's CRD is a whole
// operator: applied to a cluster without the CRD, the CRD is created and Established and the
// parent converges, with no restart. A compatible parentSchema change reaches the CRD and the
// parents; one that a stored parent would not survive is refused naming it, while the old CRD and
// version keep serving; with the policy's opt-in it goes through. A CRD someone else made is left
// as it is, and the policy says whose it is. The install writes as the policy's ServiceAccount,
// with what metacel rbac grants it.
func TestOnePolicyApplyIsOneOperator(t *testing.T) {
	group := rand.String(8) + ".install.e2e.metacel.dev"
	gizmos := schema.GroupVersionResource{Group: group, Version: "v1", Resource: "gizmos"}
	crdName := "gizmos." + group
	t.Cleanup(func() { _ = cluster.dynamic.Resource(crdsGVR).Delete(t.Context(), crdName, metav1.DeleteOptions{}) })
	policyNS, parentNS := newNamespace(t, "policies"), newNamespace(t, "gizmos")

	v1 := gizmoPolicy(group, "", []string{"color: string"}, []string{`color: "${parent.spec.color}"`})
	grantPolicyText(t, policyNS, v1)
	rt := startRuntimeWith(t, operator.Options{PolicyNamespace: policyNS})

	applied := time.Now()
	applyConfigMap(t, installPolicyConfigMap("policy-gizmo", policyNS, v1))
	waitFor(t, crdsGVR, "", crdName, wait, established)
	establishedAfter := time.Since(applied)
	createGizmo(t, gizmos, parentNS, "a", map[string]any{"color": "red"})
	createdAfter := time.Since(applied)
	child := waitFor(t, configMapsGVR, parentNS, "a-summary", wait, func(*unstructured.Unstructured) error { return nil })
	t.Logf("from the ConfigMap's apply: CRD Established after %s, the first parent created after %s (the API server serves the new kind), its child after %s",
		establishedAfter.Round(time.Millisecond), createdAfter.Round(time.Millisecond), time.Since(applied).Round(time.Millisecond))
	expectEqual(t, "child data", str(child, "data", "color"), "red")
	waitFor(t, gizmos, parentNS, "a", wait, hasCondition("Ready", "True", "", ""))
	crd := waitFor(t, crdsGVR, "", crdName, wait, established)
	expectEqual(t, "installed-by label", crd.GetLabels()[contract.LabelInstalledBy], "gizmo-"+group[:8])
	if !slices.ContainsFunc(crd.GetManagedFields(), func(m metav1.ManagedFieldsEntry) bool {
		return m.Manager == "metacel" && m.Operation == metav1.ManagedFieldsOperationApply
	}) {
		t.Errorf("the CRD is not applied by field manager metacel: %v", crd.GetManagedFields())
	}

	t.Run("a compatible change reaches the CRD and the parents", func(t *testing.T) {
		v2 := gizmoPolicy(group, "", []string{"color: string", "shape: {type: string, default: round}"},
			[]string{`color: "${parent.spec.color}"`, `shape: "${parent.spec.shape}"`})
		applyConfigMap(t, installPolicyConfigMap("policy-gizmo", policyNS, v2))
		waitFor(t, configMapsGVR, parentNS, "a-summary", wait, func(cm *unstructured.Unstructured) error {
			if got := str(cm, "data", "shape"); got != "round" {
				return fmt.Errorf("data.shape = %q, want the new field's default", got)
			}
			return nil
		})
		waitFor(t, crdsGVR, "", crdName, wait, declares("shape", true))
	})

	t.Run("a change a stored parent would not survive is refused, naming it; the old version keeps serving", func(t *testing.T) {
		v3 := gizmoPolicy(group, "", []string{"shape: {type: string, default: round}"}, []string{`shape: "${parent.spec.shape}"`})
		applyConfigMap(t, installPolicyConfigMap("policy-gizmo", policyNS, v3))
		note := waitEventHolding(t, policyNS, "policy-gizmo", "PolicyInvalid", parentNS+"/a")
		t.Logf("PolicyInvalid: %s", note)
		for _, want := range []string{"spec.color", "would be removed", contract.AnnotationAllowBreakingSchemaChange} {
			if !strings.Contains(note, want) {
				t.Errorf("PolicyInvalid %q lacks %q", note, want)
			}
		}
		waitFor(t, crdsGVR, "", crdName, wait, declares("color", true))
		createGizmo(t, gizmos, parentNS, "b", map[string]any{"color": "blue"})
		b := waitFor(t, configMapsGVR, parentNS, "b-summary", wait, func(*unstructured.Unstructured) error { return nil })
		expectEqual(t, "the old version's child", str(b, "data", "color"), "blue")
	})

	t.Run("with the policy's opt-in, a breaking change goes through", func(t *testing.T) {
		v4 := gizmoPolicy(group, "  annotations: {"+contract.AnnotationAllowBreakingSchemaChange+`: "true"}`+"\n",
			[]string{"shape: {type: string, default: round}"}, []string{`shape: "${parent.spec.shape}"`})
		applyConfigMap(t, installPolicyConfigMap("policy-gizmo", policyNS, v4))
		waitFor(t, crdsGVR, "", crdName, wait, declares("color", false))
		waitFor(t, configMapsGVR, parentNS, "b-summary", wait, func(cm *unstructured.Unstructured) error {
			if _, ok := cm.Object["data"].(map[string]any)["color"]; ok {
				return fmt.Errorf("data still has color: the new version does not run")
			}
			return nil
		})
	})

	t.Run("a CRD someone else made is left as it is, and the policy says whose it is", func(t *testing.T) {
		other := rand.String(8) + ".install.e2e.metacel.dev"
		otherCRD := "gizmos." + other
		t.Cleanup(func() { _ = cluster.dynamic.Resource(crdsGVR).Delete(t.Context(), otherCRD, metav1.DeleteOptions{}) })
		byHand := readYAMLObject(t, crdYAMLIn(other, "gizmos", "Gizmo", "Namespaced", "color: {type: string}"))
		made, err := cluster.dynamic.Resource(crdsGVR).Create(t.Context(), byHand, metav1.CreateOptions{FieldManager: "kubectl-create"})
		if err != nil {
			t.Fatal(err)
		}
		text := strings.Replace(gizmoPolicy(other, "", []string{"color: string"}, []string{`color: "${parent.spec.color}"`}),
			"serviceAccountName: gizmo", "serviceAccountName: other", 1) // its grant goes when the subtest ends
		grantPolicyText(t, policyNS, text)
		applyConfigMap(t, installPolicyConfigMap("policy-other", policyNS, text))
		note := waitEventHolding(t, policyNS, "policy-other", "PolicyInvalid", "not installed by metacel")
		t.Logf("PolicyInvalid: %s", note)
		if !strings.Contains(note, `"kubectl-create"`) {
			t.Errorf("PolicyInvalid %q does not name the CRD's owner", note)
		}
		now, err := cluster.dynamic.Resource(crdsGVR).Get(t.Context(), otherCRD, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		expectEqual(t, "the CRD's generation", now.GetGeneration(), made.GetGeneration())
		if _, ok := now.GetLabels()[contract.LabelInstalledBy]; ok {
			t.Errorf("the CRD was labelled: %v", now.GetLabels())
		}
	})

	t.Run("a restart writes no CRD", func(t *testing.T) {
		crdPath := "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/" + crdName
		if n := rt.writesTo(crdPath); n < 3 {
			t.Fatalf("the first runtime wrote the CRD %d times, want its create and two updates: are its writes counted?", n)
		}
		rt.stop()
		again := startRuntimeWith(t, operator.Options{PolicyNamespace: policyNS})
		createGizmo(t, gizmos, parentNS, "c", map[string]any{"shape": "square"})
		waitFor(t, configMapsGVR, parentNS, "c-summary", wait, func(*unstructured.Unstructured) error { return nil })
		expectEqual(t, "writes to the CRD", again.writesTo(crdPath), 0)
	})
}

// installPolicyConfigMap is a policy ConfigMap holding text.
func installPolicyConfigMap(name, ns, text string) *corev1.ConfigMap {
	return &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: map[string]string{"metacel.dev/policy": "true"}},
		Data:       map[string]string{"policy.yaml": text},
	}
}

// grantPolicyText creates the ServiceAccount of the policy text with what metacel rbac grants it.
func grantPolicyText(t testing.TB, ns, text string) {
	t.Helper()
	docs, err := policy.Parse("policy.yaml", []byte(text))
	if err != nil {
		t.Fatal(err)
	}
	grantCompositePolicies(t, cluster.kube, ns, []*policy.CompositePolicy{docs[0].Policy}, func(schema.GroupVersionResource) bool { return false })
}

func createGizmo(t *testing.T, gvr schema.GroupVersionResource, ns, name string, spec map[string]any) {
	t.Helper()
	obj := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": gvr.GroupVersion().String(), "kind": "Gizmo",
		"metadata": map[string]any{"name": name, "namespace": ns}, "spec": spec,
	}}
	createWhenServed(t, gvr, obj)
}

// established checks a CRD's Established condition.
func established(crd *unstructured.Unstructured) error {
	conds, _, _ := unstructured.NestedSlice(crd.Object, "status", "conditions")
	for _, c := range conds {
		if m, _ := c.(map[string]any); m["type"] == "Established" && m["status"] == "True" {
			return nil
		}
	}
	return fmt.Errorf("not Established")
}

// declares checks whether a CRD's schema declares a field of the spec.
func declares(field string, want bool) func(*unstructured.Unstructured) error {
	return func(crd *unstructured.Unstructured) error {
		versions, _, _ := unstructured.NestedSlice(crd.Object, "spec", "versions")
		v, _ := versions[0].(map[string]any)
		_, got, _ := unstructured.NestedMap(v, "schema", "openAPIV3Schema", "properties", "spec", "properties", field)
		if got != want {
			return fmt.Errorf("spec.%s declared: %v, want %v", field, got, want)
		}
		return nil
	}
}

// waitEventHolding waits for an Event of metacel about an object with a reason and a note
// holding text, and returns the note.
func waitEventHolding(t *testing.T, ns, regarding, reason, text string) string {
	t.Helper()
	var note string
	eventually(t, wait, fmt.Sprintf("event %s on %s holding %q", reason, regarding, text), func() error {
		list, err := cluster.kube.EventsV1().Events(ns).List(t.Context(), metav1.ListOptions{})
		if err != nil {
			return err
		}
		var seen []string
		for _, e := range list.Items {
			if e.Regarding.Name == regarding && e.Reason == reason && e.ReportingController == "metacel" {
				if strings.Contains(e.Note, text) {
					note = e.Note
					return nil
				}
				seen = append(seen, e.Note)
			}
		}
		return fmt.Errorf("none among %q", seen)
	})
	return note
}

func readYAMLObject(t *testing.T, text string) *unstructured.Unstructured {
	t.Helper()
	obj := &unstructured.Unstructured{}
	if err := yaml.Unmarshal([]byte(text), &obj.Object); err != nil {
		t.Fatal(err)
	}
	return obj
}

// TestTheRulesOfAParentSchemaHoldInTheCluster: the CEL rules and immutable fields a policy declares
// in parentSchema reach the CRD it installs, and the API server enforces them at admission: a
// parent that breaks a rule or a field's format is refused on create, a change of an immutable
// field on update, with the rule's message (issue 40, item 9).
func TestTheRulesOfAParentSchemaHoldInTheCluster(t *testing.T) {
	group := rand.String(8) + ".rules.e2e.metacel.dev"
	gizmos := schema.GroupVersionResource{Group: group, Version: "v1", Resource: "gizmos"}
	crdName := "gizmos." + group
	t.Cleanup(func() { _ = cluster.dynamic.Resource(crdsGVR).Delete(t.Context(), crdName, metav1.DeleteOptions{}) })
	policyNS, parentNS := newNamespace(t, "policies"), newNamespace(t, "gizmos")
	text := gizmoPolicy(group, "", []string{
		"color: {type: string, immutable: true}",
		`size: {type: integer, x-kubernetes-validations: [{rule: "self <= 10", message: "at most 10"}]}`,
		"contact: {type: string, format: email}",
	}, []string{`color: "${parent.spec.color}"`})
	grantPolicyText(t, policyNS, text)
	startRuntimeWith(t, operator.Options{PolicyNamespace: policyNS})
	applyConfigMap(t, installPolicyConfigMap("policy-gizmo", policyNS, text))
	waitFor(t, crdsGVR, "", crdName, wait, established)

	gizmo := func(name string, spec map[string]any) *unstructured.Unstructured {
		return &unstructured.Unstructured{Object: map[string]any{"apiVersion": group + "/v1", "kind": "Gizmo",
			"metadata": map[string]any{"name": name, "namespace": parentNS}, "spec": spec}}
	}
	createGizmo(t, gizmos, parentNS, "a", map[string]any{"color": "red", "size": int64(3)}) // once the kind is served
	waitFor(t, configMapsGVR, parentNS, "a-summary", wait, func(*unstructured.Unstructured) error { return nil })
	_, err := cluster.dynamic.Resource(gizmos).Namespace(parentNS).Create(t.Context(), gizmo("big", map[string]any{"color": "red", "size": int64(11)}), metav1.CreateOptions{})
	if err == nil || !strings.Contains(err.Error(), "at most 10") {
		t.Errorf("create of a Gizmo of size 11: %v, want the rule's message", err)
	}
	_, err = cluster.dynamic.Resource(gizmos).Namespace(parentNS).Create(t.Context(), gizmo("mail", map[string]any{"color": "red", "contact": "not an address"}), metav1.CreateOptions{})
	if err == nil || !strings.Contains(err.Error(), "email") {
		t.Errorf("create of a Gizmo whose contact is no e-mail address: %v, want it refused by the format", err)
	}
	a, err := cluster.dynamic.Resource(gizmos).Namespace(parentNS).Get(t.Context(), "a", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	a.Object["spec"].(map[string]any)["color"] = "blue"
	_, err = cluster.dynamic.Resource(gizmos).Namespace(parentNS).Update(t.Context(), a, metav1.UpdateOptions{})
	if err == nil || !strings.Contains(err.Error(), "immutable") {
		t.Errorf("update of an immutable color: %v, want it refused as immutable", err)
	}
}
