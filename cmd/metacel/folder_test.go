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
