package main

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"
)

// TestAFolderHoldsAPolicyItsCRDSampleAndTests runs the commands an author runs in a folder that
// holds a policy, its CRD, a sample and its tests (testdata/folder): each command takes the files
// that are its own, and skips the others with a note.
func TestAFolderHoldsAPolicyItsCRDSampleAndTests(t *testing.T) {
	const dir = "testdata/folder"
	tests := []struct {
		name   string
		args   []string
		golden string
	}{
		{"validate checks the policy and skips the CRD, the sample and the test file", []string{"validate", dir}, "validate.txt"},
		{"validate types the policy by the folder's CRD", []string{"validate", dir, "--crd", dir}, "validate-crd.txt"},
		{"test runs the test file and skips the policy, the CRD and the sample", []string{"test", dir}, "test.txt"},
		{"rbac grants what the folder's policy needs", []string{"rbac", dir}, "rbac.txt"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			out, errOut, err := runCLI(t, tc.args...)
			got := fmt.Sprintf("$ metacel %s\n%s%s", strings.Join(tc.args, " "), out, errOut)
			if err != nil {
				t.Errorf("metacel %v: %v\n%s", tc.args, err, got)
			}
			golden(t, filepath.Join("testdata", "folder-output", tc.golden), got)
		})
	}
}

// TestAFolderWithMistakesFailsAtTheirLines runs the commands an author runs in a folder whose
// policies hold mistakes (testdata/mistakes): a labelled policy ConfigMap, as the README writes
// one, and an unlabelled ConfigMap holding a CompositePolicy, neither of which parses; a sample
// parent the declared schema refuses; a test that observes a child under a misspelt name. Each
// command fails, with each mistake at its file and line: none is skipped as no policy.
func TestAFolderWithMistakesFailsAtTheirLines(t *testing.T) {
	const dir = "testdata/mistakes"
	tests := []struct {
		name   string
		args   []string
		golden string
	}{
		{"validate reports the policy ConfigMaps that do not parse, and the sample the schema refuses", []string{"validate", dir}, "validate.txt"},
		{"rbac reports the policy ConfigMaps that do not parse", []string{"rbac", dir}, "rbac.txt"},
		{"test fails on the policy ConfigMaps that do not parse, and on the misspelt observed child", []string{"test", dir}, "test.txt"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			out, errOut, err := runCLI(t, tc.args...)
			got := fmt.Sprintf("$ metacel %s\n%s%s", strings.Join(tc.args, " "), out, errOut)
			if err == nil {
				t.Errorf("metacel %v passed, want it to fail:\n%s", tc.args, got)
			} else {
				got += fmt.Sprintf("error: %v\n", err)
			}
			golden(t, filepath.Join("testdata", "mistakes-output", tc.golden), got)
		})
	}
}
