package policytest

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
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
		{"a child named by a pattern keeps it",
			"        expect:\n          match: subset\n          children: [{kind: ConfigMap, metadata: {name: giz*}, data: {range: 9-9}}]\n",
			"        expect:\n          match: subset\n          children: [{kind: ConfigMap, metadata: {name: giz*}, data: {range: 1-2}}]\n"},
		{"a child named by its id keeps it, and gets no name",
			"        expect:\n          match: subset\n          children: [{kind: ConfigMap, id: config, data: {range: 9-9}}]\n",
			"        expect:\n          match: subset\n          children: [{kind: ConfigMap, id: config, data: {range: 1-2}}]\n"},
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

// TestUpdateKeepsASubsetASubset records what a step gave into subset expectations written in the
// author's terms: the record keeps the expectation's ids, name patterns and stringData, and adds
// no field the author left out, even where the expected items are gone.
func TestUpdateKeepsASubsetASubset(t *testing.T) {
	got := &outcome{changes: []string{}, children: []any{
		map[string]any{"apiVersion": "batch/v1", "kind": "Job",
			"metadata": map[string]any{"name": "report-9f8e7d6c", "namespace": "ns", "labels": map[string]any{"metacel.dev/child-id": "job"}},
			"spec":     map[string]any{"parallelism": int64(1), "backoffLimit": int64(6)}},
		map[string]any{"apiVersion": "v1", "kind": "Secret",
			"metadata": map[string]any{"name": "creds", "namespace": "ns", "labels": map[string]any{"metacel.dev/child-id": "creds"}},
			"data":     map[string]any{"user": "YWRtaW4=", "token": "dA=="}}, // admin, t
	}, status: map[string]any{"phase": "Running", "conditions": []any{
		map[string]any{"type": "Synced", "status": "True", "reason": "Synced"},
		map[string]any{"type": "Ready", "status": "True", "reason": "ChildrenReady"},
	}}}
	tests := []struct {
		name, key string
		match     string
		old, want string // the expectation's value before and after, as YAML
	}{
		{"a child named by id keeps its id, and gets no name", "children", MatchSubset,
			"[{kind: Job, id: job, spec: {parallelism: 2}}]",
			"[{kind: Job, id: job, spec: {parallelism: 1}}]"},
		{"a name pattern stays a pattern", "children", MatchSubset,
			"[{kind: Job, metadata: {name: report-*}, spec: {parallelism: 2}}]",
			"[{kind: Job, metadata: {name: report-*}, spec: {parallelism: 1}}]"},
		{"a Secret's stringData stays stringData, with the value it now holds", "children", MatchSubset,
			"[{kind: Secret, metadata: {name: creds}, stringData: {user: reporter}}]",
			"[{kind: Secret, metadata: {name: creds}, stringData: {user: admin}}]"},
		{"an expected child the step no longer gives: the children it gives, by what names them", "children", MatchSubset,
			"[{kind: Job, metadata: {name: report-old}, spec: {parallelism: 2}}]",
			"[{apiVersion: batch/v1, kind: Job, metadata: {name: report-9f8e7d6c, namespace: ns}}, {apiVersion: v1, kind: Secret, metadata: {name: creds, namespace: ns}}]"},
		{"a condition no longer given: the conditions it gives, by type, and nothing else of the status", "status", MatchSubset,
			"{conditions: [{type: Gone, status: 'True'}]}",
			"{conditions: [{type: Synced}, {type: Ready}]}"},
		{"an exact expectation keeps the child id and the stringData it gives", "children", MatchExact,
			"[{kind: Job, id: job}, {kind: Secret, metadata: {name: creds}, stringData: {user: x}}]",
			`[{apiVersion: batch/v1, kind: Job, id: job, metadata: {namespace: ns, labels: {metacel.dev/child-id: job}}, spec: {parallelism: 1, backoffLimit: 6}},
			  {apiVersion: v1, kind: Secret, metadata: {name: creds, namespace: ns, labels: {metacel.dev/child-id: creds}}, data: {token: dA==}, stringData: {user: admin}}]`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var old, want any
			if err := yaml.Unmarshal([]byte(tc.old), &old); err != nil {
				t.Fatal(err)
			}
			if err := yaml.Unmarshal([]byte(tc.want), &want); err != nil {
				t.Fatal(err)
			}
			exp := &Expect{Match: tc.match, Has: map[string]bool{tc.key: true}}
			exp.set(tc.key, old)
			rec := recorded(exp, got)
			if !reflect.DeepEqual(rec.Has, exp.Has) {
				t.Fatalf("recorded the keys %v, want %v", rec.Has, exp.Has)
			}
			if have := normalize(rec.value(tc.key)); !reflect.DeepEqual(have, normalize(want)) {
				h, _ := yaml.Marshal(have)
				w, _ := yaml.Marshal(normalize(want))
				t.Errorf("recorded\n%s\nwant\n%s", h, w)
			}
			if diff := compare(rec, got); diff != "" {
				t.Errorf("the recorded expectation fails:\n%s", diff)
			}
		})
	}
}
