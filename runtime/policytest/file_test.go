package policytest

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func writeFile(t *testing.T, name, text string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestLoadReportsMistakesWithLineAndPath checks that each mistake in a test file names its line,
// its field path and the fix.
func TestLoadReportsMistakesWithLineAndPath(t *testing.T) {
	const parent = `{apiVersion: v1, kind: ConfigMap, metadata: {name: p}}`
	tests := []struct {
		name, text, want string
	}{
		{"an unknown field names the known ones",
			"policy: p.yaml\ntest: []\n",
			"t.yaml:2: test: unknown field \"test\": use one of crds, policy, policyName, policyNamespace, tests"},
		{"a missing field is required",
			"policy: p.yaml\ntests:\n  - name: a\n    steps: [{expect: {changes: []}}]\n",
			"t.yaml:3: tests[0]: parent is required: give the parent's file (relative to this one), or the object inline"},
		{"a match mode must be exact or subset",
			"policy: p.yaml\ntests:\n  - name: a\n    parent: " + parent + "\n    steps:\n      - expect:\n          match: partial\n          changes: []\n",
			`t.yaml:7: tests[0].steps[0].expect.match: "partial" is no match mode: use exact (the default) or subset`},
		{"an expectation must check something",
			"policy: p.yaml\ntests:\n  - name: a\n    parent: " + parent + "\n    steps:\n      - expect: {match: subset}\n",
			"t.yaml:6: tests[0].steps[0].expect: expects nothing: give children, status, changes or error"},
		{"an inline object needs its identity",
			"policy: p.yaml\ntests:\n  - name: a\n    parent: {kind: ConfigMap}\n    steps: [{expect: {changes: []}}]\n",
			"t.yaml:4: tests[0].parent: an object needs apiVersion, kind and metadata.name"},
		{"a file that does not exist is named",
			"policy: p.yaml\ntests:\n  - name: a\n    parent: missing.yaml\n    steps: [{expect: {changes: []}}]\n",
			"missing.yaml: no such file or directory: give a file relative to this one"},
		{"two tests cannot share a name",
			"policy: p.yaml\ntests:\n  - {name: a, parent: " + parent + ", steps: [{expect: {changes: []}}]}\n  - {name: a, parent: " + parent + ", steps: [{expect: {changes: []}}]}\n",
			`tests[1].name: "a" names two tests: give each its own name`},
		{"a field given twice is refused",
			"policy: p.yaml\npolicy: q.yaml\ntests: []\n",
			"t.yaml:2: policy: given twice: keep one"},
		{"a child's name pattern must be a glob",
			"policy: p.yaml\ntests:\n  - name: a\n    parent: " + parent + "\n    steps:\n      - expect:\n          children:\n            - kind: Job\n              metadata: {name: \"report-[\"}\n",
			`t.yaml:9: tests[0].steps[0].expect.children[0].metadata.name: "report-[" is no glob (syntax error in pattern): use * for any characters, ? for one, [a-z] for one of a range`},
		{"a child id must be a string",
			"policy: p.yaml\ntests:\n  - name: a\n    parent: " + parent + "\n    steps:\n      - expect:\n          children: [{kind: Job, id: [job]}]\n",
			"t.yaml:7: tests[0].steps[0].expect.children[0].id: expected the id of one of the policy's children (children[].id), a string"},
		{"steps must be a list",
			"policy: p.yaml\ntests:\n  - name: a\n    parent: " + parent + "\n    steps: {}\n",
			"t.yaml:5: tests[0].steps: expected a list of steps"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := load(writeFile(t, "t.yaml", tc.text))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want an error containing %q", err, tc.want)
			}
		})
	}
}
