package policytest

import (
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
