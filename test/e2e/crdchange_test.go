//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"metacel.dev/metacel/runtime/operator"
)

var cogs = schema.GroupVersionResource{Group: "e2e.metacel.dev", Version: "v1", Resource: "cogs"}

const cogCRDName = "cogs.e2e.metacel.dev"

// crdYAML is a CRD of the group e2e.metacel.dev, version v1, with the status subresource and
// an open status; specProps are the properties of its spec, one YAML line each.
func crdYAML(plural, kind, scope string, specProps ...string) string {
	return crdYAMLIn("e2e.metacel.dev", plural, kind, scope, specProps...)
}

// crdYAMLIn is crdYAML in another group.
func crdYAMLIn(group, plural, kind, scope string, specProps ...string) string {
	singular := strings.ToLower(kind)
	var props strings.Builder
	for _, p := range specProps {
		fmt.Fprintf(&props, "                %s\n", p)
	}
	return `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: ` + plural + `.` + group + `
spec:
  group: ` + group + `
  scope: ` + scope + `
  names: {kind: ` + kind + `, listKind: ` + kind + `List, plural: ` + plural + `, singular: ` + singular + `}
  versions:
    - name: v1
      served: true
      storage: true
      subresources: {status: {}}
      schema:
        openAPIV3Schema:
          type: object
          properties:
            spec:
              type: object
              properties:
` + props.String() + `            status:
              type: object
              x-kubernetes-preserve-unknown-fields: true
`
}

// cogCRD is the Cog CRD with the given string fields in its spec, beside the integer size.
func cogCRD(fields ...string) string {
	props := []string{"size: {type: integer}"}
	for _, f := range fields {
		props = append(props, f+": {type: string}")
	}
	return crdYAML("cogs", "Cog", "Namespaced", props...)
}

// cogPolicy is the Cog policy: a ConfigMap holding the size and the given spec fields.
func cogPolicy(t *testing.T, fields ...string) []byte {
	text := strings.NewReplacer("gadgets", "cogs", "gadget", "cog").
		Replace(readFile(t, filepath.Join("testdata", "policies", "late", "gadget.yaml")))
	for _, f := range fields {
		text += fmt.Sprintf("          %s: \"${parent.spec.%s}\"\n", f, f)
	}
	return []byte(text)
}

// applyCRD applies a CRD and waits until it is established.
func applyCRD(t *testing.T, text, name string) {
	t.Helper()
	path := writeTemp(t, name+".yaml", []byte(text))
	if out, err := kubectlCmd(t.Context(), "apply", "-f", path); err != nil {
		t.Fatalf("apply the CRD %s: %v\n%s", name, err, out)
	}
	waitFor(t, crdsGVR, "", name, wait, established) // kubectl wait fails at once on a CRD without conditions yet
}

// TestCRDSchemaChange changes a parent CRD's schema while the runtime runs: a policy that reads a
// new field loads, whether it comes before the CRD change (it failed to load, and is retried) or
// after it (the runtime must not type it with the schema it read before), and sees the field's
// values (its informers list afresh). Then the CRD is deleted and created again.
func TestCRDSchemaChange(t *testing.T) {
	applyCRD(t, cogCRD(), cogCRDName)
	t.Cleanup(func() { _, _ = kubectlCmd(context.Background(), "delete", "crd", "cogs.e2e.metacel.dev") })
	dir := t.TempDir()
	policyFile := filepath.Join(dir, "cog.yaml")
	writePolicy := func(data []byte) {
		if err := os.WriteFile(policyFile, data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	writePolicy(cogPolicy(t))
	gens := &generations{}
	rt := startRuntimeWith(t, operator.Options{PolicyDirs: []string{dir}, OnReload: gens.set})
	gens.waitFor(t, "cog", 1)
	ns := newNamespace(t, "cog")
	create(t, cogs, &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "e2e.metacel.dev/v1", "kind": "Cog",
		"metadata": map[string]any{"name": "c", "namespace": ns},
		"spec":     map[string]any{"size": int64(3), "color": "red", "shape": "round"},
	}})
	waitFor(t, configMapsGVR, ns, "c-cog", wait, hasData("size", "3"))

	// the policy reads spec.color before the CRD has it: it fails to load, the last good one runs
	writePolicy(cogPolicy(t, "color"))
	eventually(t, wait, "a load error for the policy reading an unknown field", func() error {
		if n := metricValue(rt, "metacel_policy_load_errors_total", "cog"); n == 0 {
			return fmt.Errorf("no load error yet")
		}
		return nil
	})
	expectEqual(t, "generation while the CRD lacks the field", gens.of("cog"), 1)
	// the CRD gains spec.color: the failed policy is loaded again, and now loads
	applyCRD(t, cogCRD("color"), cogCRDName)
	gens.waitFor(t, "cog", 2)
	setSpec(t, ns, "c", "color", "red")
	waitFor(t, configMapsGVR, ns, "c-cog", wait, hasData("color", "red"))

	// the CRD gains spec.shape first, then a policy reads it: typed with the new schema
	applyCRD(t, cogCRD("color", "shape"), cogCRDName)
	setSpec(t, ns, "c", "shape", "square")
	writePolicy(cogPolicy(t, "color", "shape"))
	waitFor(t, configMapsGVR, ns, "c-cog", wait, hasData("shape", "square"))

	// the CRD goes: the policy stops and waits (no controller failing to list); it comes back: the
	// policy starts again
	if out, err := kubectlCmd(t.Context(), "delete", "crd", "cogs.e2e.metacel.dev", "--wait"); err != nil {
		t.Fatalf("delete the Cog CRD: %v\n%s", err, out)
	}
	gens.waitFor(t, "cog", 0)
	applyCRD(t, cogCRD("color", "shape"), cogCRDName)
	gens.waitFor(t, "cog", 1)
	create(t, cogs, &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "e2e.metacel.dev/v1", "kind": "Cog",
		"metadata": map[string]any{"name": "d", "namespace": ns},
		"spec":     map[string]any{"size": int64(5), "color": "blue", "shape": "flat"},
	}})
	waitFor(t, configMapsGVR, ns, "d-cog", wait, hasData("color", "blue"))
}

// setSpec sets a new string field of a Cog's spec. The API server serves a changed CRD schema a
// moment after the update: until then it prunes the field, and the patch is made again.
func setSpec(t *testing.T, ns, name, field, value string) {
	t.Helper()
	eventually(t, wait, fmt.Sprintf("cog %s/%s with spec.%s", ns, name, field), func() error {
		obj, err := cluster.dynamic.Resource(cogs).Namespace(ns).Patch(t.Context(), name, types.MergePatchType,
			fmt.Appendf(nil, `{"spec":{%q:%q}}`, field, value), metav1.PatchOptions{})
		if err != nil {
			return err
		}
		if got := str(obj, "spec", field); got != value {
			return fmt.Errorf("spec.%s is %q", field, got)
		}
		return nil
	})
}
