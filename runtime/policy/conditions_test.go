package policy

import (
	"fmt"
	"strings"
	"testing"

	"metacel.dev/metacel/runtime/kinds"
)

func TestAConditionTheAPIServerWouldRefuseIsALoadError(t *testing.T) {
	tests := []struct {
		name, conditions, want string
	}{
		{"a type the runtime writes", "    - {type: Ready, status: \"True\", reason: Fine}\n",
			`p.yaml:13: spec.conditions[0].type: "Ready" is written by the runtime: name the condition otherwise (say "DatabaseReady"), or use spec.readyWhen for the parent's readiness`},
		{"a literal status that is none", "    - {type: Found, status: yes, reason: Fine}\n",
			`p.yaml:13: spec.conditions[0].status: "yes" is not a condition status: write True, False or Unknown, or a ${} template that gives one`},
		{"a reason with spaces", "    - {type: Found, status: \"True\", reason: secret found}\n",
			`p.yaml:13: spec.conditions[0].reason: reason "secret found" is not one CamelCase word (letters, digits, _ , :, starting with a letter), as the API server requires: write, say, "SecretFound"`},
		{"no reason", "    - {type: Found, status: \"True\"}\n",
			`p.yaml:13: spec.conditions[0].reason: a condition needs a reason`},
		{"one type twice", "    - {type: Found, status: \"True\", reason: A}\n    - {type: Found, status: \"False\", reason: B}\n",
			`p.yaml:14: spec.conditions[1].type: condition type "Found" is also given at spec.conditions[0]: give each condition one entry`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Load("p.yaml", []byte(header+"  conditions:\n"+tc.conditions), kinds.NewCatalog())
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v, want one containing %q", err, tc.want)
			}
		})
	}
}

// A policy whose CRD is its parentSchema may give at most 14 conditions: with Synced and Ready,
// a 15th makes a status the CRD refuses (status.conditions has at most 16 items), at every sync.
func TestMoreConditionsThanTheParentsCRDHoldsIsALoadError(t *testing.T) {
	policy := func(n int) string {
		text := `apiVersion: metacel.dev/v1alpha1
kind: CompositePolicy
metadata: {name: things}
spec:
  parentResource: {apiVersion: example.com/v1, resource: things}
  parentSchema: {kind: Thing, spec: {size: integer}}
  conditions:
`
		for i := range n {
			text += fmt.Sprintf("    - {type: C%d, status: \"True\", reason: Fine}\n", i)
		}
		return text
	}
	if _, err := Load("p.yaml", []byte(policy(14)), kinds.NewCatalog()); err != nil {
		t.Errorf("14 conditions: %v", err)
	}
	_, err := Load("p.yaml", []byte(policy(15)), kinds.NewCatalog())
	if want := "spec.conditions[14]: more than 14 conditions"; err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("15 conditions: error %v, want one containing %q", err, want)
	}
}
