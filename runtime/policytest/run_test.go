package policytest

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestRunFile runs the engine's own test files, which must pass.
func TestRunFile(t *testing.T) {
	for _, file := range []string{"gadget.yaml", "secret.yaml", "report.yaml"} {
		t.Run(file, func(t *testing.T) {
			reports, err := runFile(t.Context(), filepath.Join("testdata", file), Options{})
			if err != nil {
				t.Fatal(err)
			}
			if len(reports) == 0 {
				t.Fatal("no test ran")
			}
			for _, r := range reports {
				if !r.Passed {
					t.Errorf("%s failed:\n%s", r.Name, strings.Join(r.Messages, "\n"))
				}
			}
		})
	}
}

// TestAnObservedObjectThatIsNoChildIsAMistake runs testdata/misspelt.yaml: an observed object
// that carries no mark of the parent and that no desired child is would never be deleted, so a
// test that gives one fails at its line, naming the children it may have meant; one that
// carries the parent's label is deleted as the sync would.
func TestAnObservedObjectThatIsNoChildIsAMistake(t *testing.T) {
	const file = "testdata/misspelt.yaml"
	const unmarked = "no desired child has its name, and it carries no mark of this Gadget (no metacel.dev/parent-uid or metacel.dev/child-id label, no ownerReference to it, no managed fields of metacel's): " +
		"offline, an object given by hand is deleted only when it carries one"
	want := map[string][]string{
		"misspelt/a step observes a misspelt child": {file + ":18: tests[0].steps[1].observed[0] (the ConfigMap gets a key): observed v1 ConfigMap default/gizmoo is no child of the parent: " +
			unmarked + "; the children of the previous step are ConfigMap default/gizmo: correct its name, or label it metacel.dev/child-id for the sync to delete it"},
		"misspelt/the test starts from a misspelt child": {file + ":28: tests[1].observed[0] (the first sync): observed v1 ConfigMap default/gizmo-old is no child of the parent: " +
			unmarked + "; this step's children are ConfigMap default/gizmo: correct its name, or label it metacel.dev/child-id for the sync to delete it"},
		"misspelt/a child under an old name, with the parent's UID, is deleted": nil,
		"misspelt/a child under an old name, with its child id, is deleted":     nil,
	}
	reports, err := runFile(t.Context(), file, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(reports) != len(want) {
		t.Fatalf("got %d reports, want %d", len(reports), len(want))
	}
	for _, r := range reports {
		w, ok := want[r.Name]
		if !ok {
			t.Errorf("unexpected test %q", r.Name)
			continue
		}
		if r.Passed != (w == nil) || strings.Join(r.Messages, "\n") != strings.Join(w, "\n") {
			t.Errorf("%s: passed %v, messages:\n%s\nwant:\n%s", r.Name, r.Passed, strings.Join(r.Messages, "\n"), strings.Join(w, "\n"))
		}
	}
}

// A step whose sync fails passes only if its expectation says the error: testdata/failed.yaml.
func TestAStepThatFailsPassesOnlyIfItExpectsTheError(t *testing.T) {
	reports, err := runFile(t.Context(), "testdata/failed.yaml", Options{})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]bool{"failed/a failure expected as none": false, "failed/a failure expected as one": true}
	if len(reports) != len(want) {
		t.Fatalf("got %d reports, want %d", len(reports), len(want))
	}
	for _, r := range reports {
		if r.Passed != want[r.Name] {
			t.Errorf("%s: passed %v, want %v; messages:\n%s", r.Name, r.Passed, want[r.Name], strings.Join(r.Messages, "\n"))
		}
		if !r.Passed && !strings.Contains(strings.Join(r.Messages, "\n"), "the step failed: ") {
			t.Errorf("%s: the message does not say the step failed:\n%s", r.Name, strings.Join(r.Messages, "\n"))
		}
	}
}

// A test file whose CRD files do not define the policy's parent ran its parents unchecked: the
// file says they are checked (the wrong CRD file given, say).
func TestCRDFilesThatDoNotDefineTheParentAreAnError(t *testing.T) {
	abs := func(p string) string {
		a, err := filepath.Abs(p)
		if err != nil {
			t.Fatal(err)
		}
		return a
	}
	file := filepath.Join(t.TempDir(), "t.yaml")
	text := "policy: " + abs("testdata/gadget-policy.yaml") + "\ncrds: [" + abs("../../crds/memcached.yaml") + "]\n" +
		"tests:\n  - name: any\n    parent: {apiVersion: example.com/v1, kind: Gadget, metadata: {name: g}}\n    steps: [{name: sync, expect: {children: []}}]\n"
	if err := os.WriteFile(file, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := runFile(t.Context(), file, Options{})
	if want := "spec.parentResource: gadgets.example.com is defined by none of the CRD files given"; err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("runFile: %v, want an error saying %q", err, want)
	}
}
