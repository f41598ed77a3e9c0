//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	dto "github.com/prometheus/client_model/go"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"

	"metacel.dev/metacel/runtime/contract"
	"metacel.dev/metacel/runtime/operator"
)

// targetAnnotation names the namespace the widgets of these tests write their far child into.
const targetAnnotation = "e2e.metacel.dev/target"

// writePolicy writes a policy file into a new directory, and returns the directory.
func writePolicy(t *testing.T, text string) string {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "policy.yaml"), []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

// plantedPolicy is a valid policy, named name, of parent resource apiVersion/resource: the text a
// child would carry to be loaded as a policy.
func plantedPolicy(name, apiVersion, resource string) string {
	return `apiVersion: metacel.dev/v1alpha1
kind: CompositePolicy
metadata: {name: ` + name + `}
spec:
  parentResource: {apiVersion: ` + apiVersion + `, resource: ` + resource + `}
  childResources:
    - {apiVersion: v1, resource: configmaps}
  children:
    - id: planted
      template: {apiVersion: v1, kind: ConfigMap, metadata: {name: "${parent.metadata.name}-planted"}}
`
}

// TestNothingIsWrittenIntoThePolicyNamespace: a policy whose confinement allows any namespace
// cannot have a parent's author write a ConfigMap into the policy namespace (a policy, or a rollout record, planted for the
// runtime to read): the parent reports why, and nothing is written there. A ConfigMap labelled as
// a policy that metacel manages (a child) is never loaded as one.
func TestNothingIsWrittenIntoThePolicyNamespace(t *testing.T) {
	policyNS := newNamespace(t, "policies")
	dir := writePolicy(t, `apiVersion: metacel.dev/v1alpha1
kind: CompositePolicy
metadata: {name: planter}
spec:
  parentResource: {apiVersion: e2e.metacel.dev/v1, resource: widgets}
  confinement: {childNamespaces: {names: ["*"]}}
  childResources:
    - {apiVersion: v1, resource: configmaps}
  children:
    - id: plant
      crossNamespace: true
      template:
        apiVersion: v1
        kind: ConfigMap
        metadata: {name: planted, namespace: "${parent.metadata.annotations['`+targetAnnotation+`']}"}
        data:
          policy.yaml: |
`+indent(strings.ReplaceAll(plantedPolicy("planted", "e2e.metacel.dev/v1", "blobs"), "${", "$${"), "            "))
	rt := startRuntimeWith(t, operator.Options{PolicyDirs: []string{dir}, PolicyNamespace: policyNS})
	ns := newNamespace(t, "author")

	t.Run("a child placed in the policy namespace is refused, and nothing is written there", func(t *testing.T) {
		w := widget(ns, "plant")
		w.SetAnnotations(map[string]string{targetAnnotation: policyNS})
		create(t, widgetsGVR, w)
		waitFor(t, widgetsGVR, ns, "plant", wait, notAllowed(
			`child "plant": ConfigMap `+policyNS+`/planted is in namespace "`+policyNS+`", which holds the runtime's own records (its policies, rollout records and memos) and never a child: give the child another namespace`))
		// the render failed: the sync that reported it wrote no child
		if cm, err := get(t, configMapsGVR, policyNS, "planted"); err == nil {
			t.Errorf("a child was written into the policy namespace: %v", cm.GetLabels())
		}
		if n := rt.sum("metacel_policy_info", "policy", "planted", gaugeValue); n != 0 {
			t.Errorf("the planted policy runs (metacel_policy_info %v)", n)
		}
	})

	t.Run("a policy ConfigMap that metacel manages is never loaded", func(t *testing.T) {
		// what a policy named "true" (which no longer loads) could leave there: a child, labelled as a policy
		planted := &corev1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{Name: "left-behind", Namespace: policyNS, Labels: map[string]string{
				contract.LabelManagedBy: contract.ManagedByValue, contract.LabelChildPolicyLegacy: "true", contract.LabelChildID: "plant",
			}},
			Data: map[string]string{"policy.yaml": plantedPolicy("planted", "e2e.metacel.dev/v1", "blobs")},
		}
		if _, err := cluster.kube.CoreV1().ConfigMaps(policyNS).Create(t.Context(), planted, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		// a policy put there after it: once it runs, the policy ConfigMaps the runtime saw with it
		// (its watch delivers them in order) have loaded too
		control := &corev1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{Name: "control", Namespace: policyNS, Labels: map[string]string{contract.LabelPolicyConfigMap: "true"}},
			Data:       map[string]string{"policy.yaml": plantedPolicy("control", "demo.rtfm.co.ua/v1", "myapps")},
		}
		if _, err := cluster.kube.CoreV1().ConfigMaps(policyNS).Create(t.Context(), control, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		eventually(t, wait, "the control policy runs", func() error {
			if rt.sum("metacel_policy_info", "policy", "control", gaugeValue) != 1 {
				return fmt.Errorf("metacel_policy_info has no policy control")
			}
			return nil
		})
		if n := rt.sum("metacel_policy_info", "policy", "planted", gaugeValue); n != 0 {
			t.Errorf("the ConfigMap metacel manages was loaded as a policy (metacel_policy_info %v)", n)
		}
		cm, err := cluster.kube.CoreV1().ConfigMaps(policyNS).Get(t.Context(), "left-behind", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if state := cm.Labels["metacel.dev/state"]; state != "" {
			t.Errorf("the ConfigMap metacel manages has a policy's status (state %q)", state)
		}
	})
}

// TestAForgedChildPinsNoParent: an object that carries a victim parent's labels, was applied
// with metacel's field manager and holds a finalizer of its own neither gives the victim's parent
// the cleanup finalizer nor keeps it from being deleted: in the attacker's namespace, which the
// victim's parent may not reach, or in one it may reach, where metacel did not write it for the
// parent (the parent's record of its children does not name it). The runtime reports it on the
// parent, and leaves it alone.
func TestAForgedChildPinsNoParent(t *testing.T) {
	victimNS, farNS, attackerNS := newNamespace(t, "victim"), newNamespace(t, "far"), newNamespace(t, "attacker")
	dir := writePolicy(t, `apiVersion: metacel.dev/v1alpha1
kind: CompositePolicy
metadata: {name: guarded}
spec:
  parentResource: {apiVersion: e2e.metacel.dev/v1, resource: widgets}
  confinement: {childNamespaces: {names: [`+farNS+`]}}
  childResources:
    - {apiVersion: v1, resource: configmaps}
  children:
    - id: config
      template:
        apiVersion: v1
        kind: ConfigMap
        metadata: {name: "${parent.metadata.name}-widget"}
        data: {color: "${parent.spec.?color.orValue('none')}"}
    - id: far
      crossNamespace: true
      includeWhen: "has(parent.metadata.annotations) && '`+targetAnnotation+`' in parent.metadata.annotations"
      template:
        apiVersion: v1
        kind: ConfigMap
        metadata: {name: "${parent.metadata.name}-far", namespace: "${parent.metadata.annotations['`+targetAnnotation+`']}"}
  status:
    color: "${children.?config.?data.?color.orValue('')}"
`)
	startRuntimeWith(t, operator.Options{PolicyDirs: []string{dir}, PolicyNamespace: newNamespace(t, "policies")})

	tests := []struct {
		name   string
		target string // the victim's far child's namespace; "" for none
		// finalizer is whether the victim's parent carries the cleanup finalizer of its own
		finalizer bool
		forgedIn  string // the forged object's namespace
		reason    string // of the event that says it is ignored
	}{
		{"a parent with children in its namespace only, forged out of its reach", "", false, attackerNS, contract.ReasonChildOutOfReach},
		{"a parent with a child in another namespace, which it may reach, forged out of its reach", farNS, true, attackerNS, contract.ReasonChildOutOfReach},
		{"a parent with children in its namespace only, forged in its reach", "", false, farNS, contract.ReasonChildNotRecorded},
		{"a parent with a child in another namespace, forged beside it", farNS, true, farNS, contract.ReasonChildNotRecorded},
	}
	for i, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			name := fmt.Sprintf("victim%d", i)
			w := widget(victimNS, name)
			if tc.target != "" {
				w.SetAnnotations(map[string]string{targetAnnotation: tc.target})
			}
			create(t, widgetsGVR, w)
			victim := waitFor(t, widgetsGVR, victimNS, name, wait, hasCondition("Ready", "True", "", ""))

			forged := forgeChild(t, tc.forgedIn, name+"-forged", victim)
			// a sync after the forged object: it decided the finalizer before writing the status
			patch(t, widgetsGVR, victimNS, name, `{"spec":{"color":"green"}}`)
			victim = waitFor(t, widgetsGVR, victimNS, name, wait, func(p *unstructured.Unstructured) error {
				if got := str(p, "status", "color"); got != "green" {
					return fmt.Errorf("status.color %q, want green", got)
				}
				return nil
			})
			if got := slices.Contains(victim.GetFinalizers(), contract.Finalizer); got != tc.finalizer {
				t.Errorf("the victim's parent carries the cleanup finalizer: %v, want %v (finalizers %v)", got, tc.finalizer, victim.GetFinalizers())
			}

			deleteObj(t, widgetsGVR, victimNS, name)
			waitGone(t, widgetsGVR, victimNS, name, wait)
			if tc.target != "" {
				waitGone(t, configMapsGVR, tc.target, name+"-far", wait)
			}
			left, err := get(t, configMapsGVR, tc.forgedIn, forged)
			switch {
			case err != nil:
				t.Errorf("the forged object: %v, want it left alone", err)
			case left.GetDeletionTimestamp() != nil || left.GetLabels()[contract.LabelParentUID] != string(victim.GetUID()):
				t.Errorf("the forged object was deleted or released: deletionTimestamp %v, labels %v", left.GetDeletionTimestamp(), left.GetLabels())
			}
			// the victim's syncs saw it, and said so
			note := waitEvent(t, victimNS, name, tc.reason)
			why := map[string]string{contract.ReasonChildOutOfReach: "where this Widget's children may not be", contract.ReasonChildNotRecorded: "metacel did not write it for this Widget"}[tc.reason]
			if !strings.Contains(note, `ConfigMap `+tc.forgedIn+`/`+forged) || !strings.Contains(note, why) {
				t.Errorf("event %q does not name the forged object and why it is ignored", note)
			}
		})
	}
}

// forgeChild applies, as any client may, with metacel's field manager, a ConfigMap in ns that
// carries a parent's labels and a finalizer of its own (removed when the test ends), and returns
// its name.
func forgeChild(t *testing.T, ns, name string, parent *unstructured.Unstructured) string {
	t.Helper()
	obj := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "v1", "kind": "ConfigMap",
		"metadata": map[string]any{
			"name": name, "namespace": ns, "finalizers": []any{"example.com/keep"},
			"labels": map[string]any{
				contract.LabelManagedBy: contract.ManagedByValue, contract.LabelChildPolicyName: "guarded",
				contract.LabelParentUID: string(parent.GetUID()), contract.LabelChildID: "config",
			},
		},
		"data": map[string]any{"color": "forged"},
	}}
	if _, err := cluster.dynamic.Resource(configMapsGVR).Namespace(ns).Apply(t.Context(), name, obj, metav1.ApplyOptions{FieldManager: "metacel", Force: true}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_, _ = cluster.dynamic.Resource(configMapsGVR).Namespace(ns).Patch(context.Background(), name, types.MergePatchType,
			[]byte(`{"metadata":{"finalizers":null}}`), metav1.PatchOptions{})
	})
	return name
}

// gaugeValue reads a gauge's sample.
func gaugeValue(m *dto.Metric) float64 { return m.GetGauge().GetValue() }

// indent prefixes every line of text.
func indent(text, prefix string) string {
	lines := strings.Split(strings.TrimSuffix(text, "\n"), "\n")
	for i, l := range lines {
		lines[i] = prefix + l
	}
	return strings.Join(lines, "\n") + "\n"
}
