package policytest

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestUpdateKeepsWhatTheAuthorWrote runs --update on steps whose expectation fails, and checks the
// step's expectation as rewritten: it keeps its match mode, its keys, their style and comments.
func TestUpdateKeepsWhatTheAuthorWrote(t *testing.T) {
	abs, err := filepath.Abs("testdata")
	if err != nil {
		t.Fatal(err)
	}
	const head = `policy: TESTDATA/gadget-policy.yaml
crds: [TESTDATA/gadget-crd.yaml]
tests:
  - name: t
    parent: {apiVersion: example.com/v1, kind: Gadget, metadata: {name: gizmo, namespace: default}, spec: {maxReplicas: 2}}
    steps:
      - name: s
`
	tests := []struct {
		name, expect, want string
	}{
		{"a subset stays a subset of the keys given, in flow style, with its comment",
			"        expect:\n          match: subset\n          children: [{kind: ConfigMap, metadata: {name: gizmo}, data: {range: 9-9}}] # the range\n          status: {replicas: 7}\n",
			"        expect:\n          match: subset\n          children: [{kind: ConfigMap, metadata: {name: gizmo}, data: {range: 1-2}}] # the range\n          status: {replicas: 2}\n"},
		{"an empty list of children stays as a subset, and the child it gives is recorded",
			"        expect:\n          match: subset\n          children: []\n",
			"        expect:\n          match: subset\n          children:\n            - apiVersion: v1\n"},
		{"a long value is no longer in flow style",
			"        expect: {children: [{kind: ConfigMap}]}\n",
			"        expect:\n          children:\n            - kind: ConfigMap\n              apiVersion: v1\n"},
		{"an exact expectation keeps its keys: changes stay the only one",
			"        expect: {changes: [delete v1 ConfigMap default/old]}\n",
			"        expect: {changes: []}\n"},
		{"a step that fails gains the error, and loses the status it no longer writes",
			"        parent: {spec: {label: two}}\n        expect:\n          match: subset\n          status: {replicas: 2}\n",
			"        expect:\n          match: subset\n          error: '" + abs + "/gadget-policy.yaml:20: spec.status.replicas: the computed status.replicas does not fit"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			text := strings.ReplaceAll(head, "TESTDATA", abs) + tc.expect
			p := writeFile(t, "update.yaml", text)
			reports, err := runFile(t.Context(), p, Options{Update: true})
			if err != nil {
				t.Fatal(err)
			}
			if len(reports) != 1 || !reports[0].Updated {
				t.Fatalf("want the test updated: %+v", reports)
			}
			data, err := os.ReadFile(p)
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(string(data), tc.want) {
				t.Errorf("the file lacks\n%s\ngot\n%s", tc.want, data)
			}
			again, err := runFile(t.Context(), p, Options{})
			if err != nil || !again[0].Passed {
				t.Errorf("the updated test fails: %v %v", err, again)
			}
		})
	}
}
