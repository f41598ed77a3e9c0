package policytest

import (
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
)

func TestCompare(t *testing.T) {
	cond := func(typ, status string) map[string]any {
		return map[string]any{"type": typ, "status": status, "reason": "R", "observedGeneration": int64(1)}
	}
	got := &outcome{
		children: []any{
			map[string]any{"kind": "Pod", "metadata": map[string]any{"name": "a", "namespace": "ns"}, "spec": map[string]any{"replicas": int64(3)}},
			map[string]any{"kind": "Service", "metadata": map[string]any{"name": "a", "namespace": "ns"}},
		},
		status:  map[string]any{"phase": "Running", "conditions": []any{cond("Synced", "True"), cond("Ready", "False")}},
		changes: []string{},
		errText: "",
	}
	tests := []struct {
		name string
		exp  *Expect
		diff string // "" when they agree, else a line of the diff
	}{
		{"subset: the fields given agree",
			&Expect{Match: MatchSubset, Has: map[string]bool{"status": true}, Status: map[string]any{"phase": "Running"}}, ""},
		{"subset: a number read as an int equals the rendered int64",
			&Expect{Match: MatchSubset, Has: map[string]bool{"children": true},
				Children: []any{map[string]any{"kind": "Pod", "metadata": map[string]any{"name": "a"}, "spec": map[string]any{"replicas": 3}}}}, ""},
		{"subset: conditions are matched by type, in any order, others ignored",
			&Expect{Match: MatchSubset, Has: map[string]bool{"status": true},
				Status: map[string]any{"conditions": []any{map[string]any{"type": "Ready", "status": "False"}}}}, ""},
		{"subset: a condition with another status differs",
			&Expect{Match: MatchSubset, Has: map[string]bool{"status": true},
				Status: map[string]any{"conditions": []any{map[string]any{"type": "Ready", "status": "True"}}}}, `-  - status: "True"`},
		{"subset: a missing child differs",
			&Expect{Match: MatchSubset, Has: map[string]bool{"children": true},
				Children: []any{map[string]any{"kind": "Pod", "metadata": map[string]any{"name": "b"}}}}, "-- kind: Pod"},
		{"subset: a child in another namespace differs",
			&Expect{Match: MatchSubset, Has: map[string]bool{"children": true},
				Children: []any{map[string]any{"kind": "Pod", "metadata": map[string]any{"name": "a", "namespace": "other"}}}}, "+children: []"},
		{"subset: a field the step does not give differs",
			&Expect{Match: MatchSubset, Has: map[string]bool{"status": true}, Status: map[string]any{"ready": true}}, "-  ready: true"},
		{"exact: a status with fewer fields differs",
			&Expect{Match: MatchExact, Has: map[string]bool{"status": true}, Status: map[string]any{"phase": "Running"}}, "+  conditions:"},
		{"exact: no changes agrees with none",
			&Expect{Match: MatchExact, Has: map[string]bool{"changes": true}, Changes: []string{}}, ""},
		{"exact: an expected change that does not happen differs",
			&Expect{Match: MatchExact, Has: map[string]bool{"changes": true}, Changes: []string{"delete v1 Pod ns/a"}}, "-- delete v1 Pod ns/a"},
		{"an expected error when the step succeeds differs",
			&Expect{Match: MatchSubset, Has: map[string]bool{"error": true}, Error: "ValidationFailed"}, "-error: ValidationFailed"},
		{"subset: an empty list of children expects none",
			&Expect{Match: MatchSubset, Has: map[string]bool{"children": true}, Children: []any{}}, "-children: []"},
		{"subset: an empty list of conditions expects none",
			&Expect{Match: MatchSubset, Has: map[string]bool{"status": true}, Status: map[string]any{"conditions": []any{}}}, "-  conditions: []"},
		{"keys not given are not checked",
			&Expect{Match: MatchExact, Has: map[string]bool{}}, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			diff := compare(tc.exp, got)
			switch {
			case tc.diff == "" && diff != "":
				t.Errorf("want agreement, got\n%s", diff)
			case tc.diff != "" && !strings.Contains(diff, tc.diff):
				t.Errorf("want a diff with %q, got\n%s", tc.diff, diff)
			}
		})
	}
}

// TestEmptyChildrenExpectNone checks that `children: []` expects no children, exactly or as a
// subset: read as null, it could never pass.
func TestEmptyChildrenExpectNone(t *testing.T) {
	none := &outcome{children: []any{}, changes: []string{}}
	for _, match := range []string{MatchExact, MatchSubset} {
		d := &decoder{file: "t.yaml"}
		var n yaml.Node
		if err := yaml.Unmarshal([]byte("match: "+match+"\nchildren: []\n"), &n); err != nil {
			t.Fatal(err)
		}
		exp := d.expect(n.Content[0], "expect")
		if diff := compare(exp, none); diff != "" {
			t.Errorf("%s: children: [] differs from no children:\n%s", match, diff)
		}
	}
}

func TestCompareErrors(t *testing.T) {
	got := &outcome{errText: "ValidationFailed: Field 'spec.image' must be provided.", children: []any{}, changes: []string{}}
	subset := &Expect{Match: MatchSubset, Has: map[string]bool{"error": true}, Error: "spec.image"}
	if d := compare(subset, got); d != "" {
		t.Errorf("subset: a part of the error agrees, got\n%s", d)
	}
	exact := &Expect{Match: MatchExact, Has: map[string]bool{"error": true}, Error: "spec.image"}
	if d := compare(exact, got); d == "" {
		t.Error("exact: a part of the error must differ")
	}
}

func TestFirstSyncsAreTheTestsThatStartFromTheParentAlone(t *testing.T) {
	syncs, err := FirstSyncs(t.Context(), "../../test/policies/myapp.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, s := range syncs {
		names = append(names, s.Name)
		if s.Parent == nil || s.Parent.GetKind() != "MyApp" || s.Parent.GetUID() != "" {
			t.Errorf("%s: want the parent as the test gives it (to create it): %v", s.Name, s.Parent)
		}
	}
	// the test without a status expectation in its first step is left out
	want := "myapp/a MyApp runs its Pod, and a new image replaces it,myapp/a MyApp without an image fails validation and creates nothing"
	if got := strings.Join(names, ","); got != want {
		t.Errorf("first syncs %q, want %q", got, want)
	}
	if diff := syncs[0].Expect.StatusDiff(map[string]any{"phase": "Running"}); !strings.Contains(diff, "-phase: Pending\n+phase: Running") {
		t.Errorf("a status that differs: diff %q", diff)
	}
}

// TestCompareInTheAuthorsTerms checks that an expected child may be named by a glob or by its
// child id, and a Secret expected with the stringData the policy writes matches the data it is
// stored as; a difference shows in those terms.
func TestCompareInTheAuthorsTerms(t *testing.T) {
	child := func(kind, name, id string, extra map[string]any) map[string]any {
		m := map[string]any{"apiVersion": "v1", "kind": kind, "metadata": map[string]any{"name": name, "namespace": "ns",
			"labels": map[string]any{"metacel.dev/child-id": id}}}
		for k, v := range extra {
			m[k] = v
		}
		return m
	}
	got := &outcome{changes: []string{}, children: []any{
		child("Job", "report-1a2b3c4d", "job", map[string]any{"spec": map[string]any{"parallelism": int64(1)}}),
		child("Job", "report-5e6f7a8b", "other", nil),
		child("Secret", "creds", "creds", map[string]any{"data": map[string]any{"user": "cmVwb3J0ZXI=", "key": "/w=="}}), // reporter; a byte that is no text
	}}
	exp := func(match string, children ...any) *Expect {
		return &Expect{Match: match, Has: map[string]bool{"children": true}, Children: children}
	}
	tests := []struct {
		name string
		exp  *Expect
		diff []string // "" when they agree, else lines of the diff
	}{
		{"subset: a child id names a hash-named child",
			exp(MatchSubset, map[string]any{"kind": "Job", "id": "job", "spec": map[string]any{"parallelism": 1}}), nil},
		{"subset: a child id no child has differs, and shows the id",
			exp(MatchSubset, map[string]any{"kind": "Job", "id": "gone"}), []string{"-- id: gone"}},
		{"subset: a glob names a generated name",
			exp(MatchSubset, map[string]any{"kind": "Job", "metadata": map[string]any{"name": "report-*"}, "spec": map[string]any{"parallelism": 1}}), nil},
		{"subset: two globs take two children",
			exp(MatchSubset, map[string]any{"kind": "Job", "metadata": map[string]any{"name": "report-*"}}, map[string]any{"kind": "Job", "metadata": map[string]any{"name": "report-????????"}}), nil},
		{"subset: a glob matching no name differs",
			exp(MatchSubset, map[string]any{"kind": "Job", "metadata": map[string]any{"name": "nightly-*"}}), []string{"-    name: nightly-*"}},
		{"subset: a glob and an id together",
			exp(MatchSubset, map[string]any{"kind": "Job", "id": "other", "metadata": map[string]any{"name": "report-*"}}), nil},
		{"subset: stringData matches the data it is stored as",
			exp(MatchSubset, map[string]any{"kind": "Secret", "metadata": map[string]any{"name": "creds"}, "stringData": map[string]any{"user": "reporter"}}), nil},
		{"subset: stringData that differs shows as stringData, with a note",
			exp(MatchSubset, map[string]any{"kind": "Secret", "metadata": map[string]any{"name": "creds"}, "stringData": map[string]any{"user": "admin"}}),
			[]string{"-    user: admin", "+    user: reporter", "note: Secret ns/creds: stringData is compared with the data the policy writes, base64-decoded"}},
		{"exact: stringData and data together, each in its own terms",
			exp(MatchExact,
				map[string]any{"apiVersion": "v1", "kind": "Job", "id": "job", "metadata": map[string]any{"namespace": "ns", "labels": map[string]any{"metacel.dev/child-id": "job"}}, "spec": map[string]any{"parallelism": 1}},
				child("Job", "report-*", "other", nil),
				child("Secret", "creds", "creds", map[string]any{"data": map[string]any{"key": "/w=="}, "stringData": map[string]any{"user": "reporter"}})), nil},
		{"exact: a value that is not text stays in data",
			exp(MatchExact, got.children[0], got.children[1],
				child("Secret", "creds", "creds", map[string]any{"stringData": map[string]any{"user": "reporter", "key": "\xff"}})),
			[]string{"+  data:", "+    key: /w==", "-    key: \ufffd"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			diff := compare(tc.exp, got)
			if len(tc.diff) == 0 && diff != "" {
				t.Errorf("want agreement, got\n%s", diff)
			}
			if len(tc.diff) > 0 && diff == "" {
				t.Errorf("want a diff with %q, got agreement", tc.diff)
			}
			for _, line := range tc.diff {
				if !strings.Contains(diff, line) {
					t.Errorf("want a diff with %q, got\n%s", line, diff)
				}
			}
		})
	}
}
