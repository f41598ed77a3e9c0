package main

import (
	"os"
	"path/filepath"
	"testing"
)

// TestDeployIsGenerated checks that deploy/ holds what `make manifests` generates from policies/:
// the ClusterRole of `metacel rbac` and copies of the policy ConfigMaps.
func TestDeployIsGenerated(t *testing.T) {
	rbacOut, _, err := runCLI(t, "rbac", filepath.Join(repo, "policies"))
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"deploy/rbac/policies.yaml", "deploy/helm/metacel/files/policy-rbac.yaml"} {
		deployed, err := os.ReadFile(filepath.Join(repo, f))
		if err != nil {
			t.Fatal(err)
		}
		if string(deployed) != rbacOut {
			t.Errorf("%s is not what `metacel rbac policies/` prints: run `make manifests`\n%s", f, lineDiff(string(deployed), rbacOut))
		}
	}
	policies, err := filepath.Glob(filepath.Join(repo, "policies", "*.yaml"))
	if err != nil || len(policies) == 0 {
		t.Fatalf("no policies: %v", err)
	}
	for _, p := range policies {
		want, _ := os.ReadFile(p)
		for _, dir := range []string{"deploy/policies", "deploy/helm/metacel/files/policies"} {
			got, err := os.ReadFile(filepath.Join(repo, dir, filepath.Base(p)))
			if err != nil || string(got) != string(want) {
				t.Errorf("%s/%s differs from policies/: run `make manifests`", dir, filepath.Base(p))
			}
		}
	}
}

func TestRBACGolden(t *testing.T) {
	out, _, err := runCLI(t, "rbac", filepath.Join(repo, "policies"), filepath.Join(repo, "test", "e2e", "testdata", "policies"))
	if err != nil {
		t.Fatal(err)
	}
	golden(t, filepath.Join("testdata", "rbac.yaml"), out)
}
