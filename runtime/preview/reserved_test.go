package preview

import (
	"errors"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"metacel.dev/metacel/runtime/contract"
	"metacel.dev/metacel/runtime/kinds"
	"metacel.dev/metacel/runtime/policy"
	"metacel.dev/metacel/runtime/render"
	"metacel.dev/metacel/test/testpolicies"
)

// anywherePolicy copies a ConfigMap parent, as a Secret, into the namespace its data.ns names:
// any namespace.
var anywherePolicy = testpolicies.YAML("farcopy", testpolicies.Fills{"NAMESPACES": `["*"]`})

func TestAPreviewPlacesNoChildInTheReservedNamespace(t *testing.T) {
	tests := []struct {
		name     string
		target   string
		reserved string
		want     string // the render error, "" for none
	}{
		{"the reserved namespace", "metacel-system", "metacel-system", `child "copy": Secret metacel-system/p-copy is in namespace "metacel-system"`},
		{"another namespace", "elsewhere", "metacel-system", ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cat := kinds.NewCatalog()
			cs, err := policy.Load("p.yaml", []byte(anywherePolicy), cat)
			if err != nil {
				t.Fatal(err)
			}
			parent := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "ConfigMap",
				"metadata": map[string]any{"name": "p", "namespace": "ns"}, "data": map[string]any{"ns": tc.target}}}
			_, err = Run(t.Context(), Input{Policy: cs[0], Parent: parent, Mapper: cat, ReservedNamespace: tc.reserved})
			var re *render.Error
			switch {
			case tc.want == "" && err != nil:
				t.Errorf("preview: %v, want none", err)
			case tc.want != "" && (!errors.As(err, &re) || re.Reason != contract.ReasonNamespaceNotAllowed || !strings.Contains(err.Error(), tc.want)):
				t.Errorf("preview: %v, want %s saying %q", err, contract.ReasonNamespaceNotAllowed, tc.want)
			}
		})
	}
}
