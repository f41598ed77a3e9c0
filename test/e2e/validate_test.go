//go:build e2e

package e2e

import (
	"context"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestValidateAgainstTheCluster checks policies with `metacel validate --kubeconfig`: the
// cluster's CRDs type the parent, so a misspelt field is an error naming the field meant, and
// its kinds' schemas check the child templates; without the cluster the same policy is untyped.
func TestValidateAgainstTheCluster(t *testing.T) {
	const crdName = "valves.e2e.metacel.dev"
	applyCRD(t, crdYAML("valves", "Valve", "Namespaced", "size: {type: integer}", "color: {type: string}"), crdName)
	t.Cleanup(func() { _, _ = kubectlCmd(context.Background(), "delete", "crd", crdName) })
	bin := buildMetacel(t)
	policy := func(value string) string {
		return strings.NewReplacer("gadgets", "valves", "gadget", "valve").
			Replace(readFile(t, filepath.Join("testdata", "policies", "late", "gadget.yaml"))) +
			"          color: \"" + value + "\"\n"
	}
	tests := []struct {
		name, value string
		args        []string
		ok          bool
		want        string
	}{
		{"typed by the cluster's CRD", "${parent.spec.color}", []string{"--kubeconfig", cluster.kubeconfig}, true,
			`typed against the cluster's CRD valves.e2e.metacel.dev`},
		{"a misspelt parent field", "${parent.spec.colr}", []string{"--kubeconfig", cluster.kubeconfig}, false,
			`undefined field 'colr' (did you mean "color"?)`},
		{"without the cluster: untyped", "${parent.spec.colr}", nil, true,
			`untyped: pass --crd to check parent fields`},
		{"an unreachable cluster", "${parent.spec.color}", []string{"--kubeconfig", filepath.Join(t.TempDir(), "missing")}, false,
			`kubeconfig`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			file := writeTemp(t, "valve.yaml", []byte(policy(tt.value)))
			out, err := exec.CommandContext(t.Context(), bin, append([]string{"validate", file}, tt.args...)...).CombinedOutput()
			if (err == nil) != tt.ok || !strings.Contains(string(out), tt.want) {
				t.Errorf("validate %v: %v\n%s\nwant success %v and %q", tt.args, err, out, tt.ok, tt.want)
			}
		})
	}
}
