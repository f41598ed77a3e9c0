package policy

import (
	"strings"
	"testing"

	"metacel.dev/metacel/runtime/kinds"
)

// TestAMisspeltCELNameIsReportedWithTheKnownOne: a misspelt field of the typed parent, child id,
// related id or variable is a load error at its line that names what was likely meant.
func TestAMisspeltCELNameIsReportedWithTheKnownOne(t *testing.T) {
	related := "  related:\n    - id: source\n      apiVersion: v1\n      resource: configmaps\n      name: x\n"
	memcached := strings.NewReplacer("demo.rtfm.co.ua/v1", "cache.example.com/v1alpha1", "myapps", "memcacheds").Replace(header)
	variables := "  variables:\n    - name: podName\n      expression: \"'p'\"\n"
	tests := []struct {
		name, policy string
		mapper       kinds.Mapper
		want         string
	}{
		{"a field of the parent's CRD", memcached + children + "      includeWhen: \"parent.spec.sise > 1\"\n", mapper(t, "memcached"),
			`p.yaml:19: spec.children[0].includeWhen: compile "parent.spec.sise > 1": undefined field 'sise' (did you mean "size"?) (column 12 of the expression)`},
		{"a child id", header + children + "  status:\n    phase: \"${children.?pdo.?status.?phase.orValue('')}\"\n", nil,
			`p.yaml:20: spec.status.phase: compile "children.?pdo.?status.?phase.orValue('')": undefined field 'pdo' (did you mean "pod"?)`},
		{"a related id", header + related + children + "      includeWhen: \"has(related.sorce)\"\n", nil,
			`p.yaml:24: spec.children[0].includeWhen: compile "has(related.sorce)": undefined field 'sorce' (did you mean "source"?)`},
		{"a variable", header + variables + children + "      includeWhen: \"variables.podname != ''\"\n", nil,
			`p.yaml:22: spec.children[0].includeWhen: compile "variables.podname != ''": undefined field 'podname' (did you mean "podName"?)`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			m := tc.mapper
			if m == nil {
				m = kinds.NewCatalog()
			}
			_, err := Load("p.yaml", []byte(tc.policy), m)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got error:\n%v\nwant it to contain:\n%s", err, tc.want)
			}
		})
	}
}

// TestAConditionalFieldLoads: "${cond ? value : null}" as a template field's whole value loads,
// in a child's template and in the status.
func TestAConditionalFieldLoads(t *testing.T) {
	p := header + children +
		"          labels: \"${has(parent.spec.banner) ? {'banner': 'yes'} : null}\"\n" +
		"  status:\n    phase: \"${has(children.pod) ? children.pod.status.?phase.orValue('Pending') : null}\"\n"
	if _, err := Load("p.yaml", []byte(p), mapper(t, "myapp")); err != nil {
		t.Fatal(err)
	}
}
