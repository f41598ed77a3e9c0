package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestSeedPolicyTests runs `metacel test test/policies`: the tests of every policy in policies/,
// so that `make unit` runs them.
func TestSeedPolicyTests(t *testing.T) {
	out, _, err := runCLI(t, "test", filepath.Join(repo, "test", "policies"))
	if err != nil {
		t.Fatalf("metacel test test/policies: %v\n%s", err, out)
	}
	for _, seed := range []string{"myapp", "memcached", "myingress", "whalesay", "configmapsync"} {
		if !strings.Contains(out, "--- PASS: "+seed+"/") {
			t.Errorf("no test of policies/%s.yaml passed:\n%s", seed, out)
		}
	}
}

// TestTestCommand runs `metacel test` on a test file that passes, one that fails, and one updated.
func TestTestCommand(t *testing.T) {
	abs, err := filepath.Abs(repo)
	if err != nil {
		t.Fatal(err)
	}
	file := func(t *testing.T, image string) string {
		t.Helper()
		p := filepath.Join(t.TempDir(), "myapp.yaml")
		text := strings.NewReplacer("REPO", abs, "IMAGE", image).Replace(`policy: REPO/policies/myapp.yaml
crds: [REPO/crds/myapp.yaml]
tests:
  - name: the Pod runs the image
    parent: REPO/samples/myapp.yaml
    steps:
      - expect:
          match: subset
          children:
            - kind: Pod
              metadata: {name: example-app-pod}
              spec:
                containers: [{name: example-app, image: "IMAGE"}]
`)
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	t.Run("a passing test prints PASS and ok", func(t *testing.T) {
		p := file(t, "nginx:latest")
		out, _, err := runCLI(t, "test", p)
		if err != nil || !strings.Contains(out, "--- PASS: myapp/the Pod runs the image\nok  \t"+p+"\t1 test\n") {
			t.Errorf("got %v:\n%s", err, out)
		}
	})
	t.Run("a failing test prints FAIL with a unified diff and exits 1", func(t *testing.T) {
		p := file(t, "nginx:1.0")
		out, _, err := runCLI(t, "test", p)
		for _, want := range []string{"--- FAIL: myapp/the Pod runs the image\n", p + ":8: tests[0].steps[0] (step 1): the subset expectation differs",
			"-    - image: nginx:1.0\n", "+    - image: nginx:latest\n", "FAIL\t" + p + "\t1 of 1 test failed\n"} {
			if !strings.Contains(out, want) {
				t.Errorf("output lacks %q:\n%s", want, out)
			}
		}
		if err == nil {
			t.Error("a failing test must make the command fail")
		}
	})
	t.Run("--update records what the step gave in the subset given, and the test then passes", func(t *testing.T) {
		p := file(t, "nginx:1.0")
		if out, _, err := runCLI(t, "test", "--update", p); err != nil || !strings.Contains(out, "(expectations updated)") {
			t.Fatalf("update: %v\n%s", err, out)
		}
		data, _ := os.ReadFile(p)
		for _, want := range []string{"match: subset", `containers: [{name: example-app, image: 'nginx:latest'}]`} {
			if !strings.Contains(string(data), want) {
				t.Errorf("the subset expectation was not kept a subset, in its style: no %q in\n%s", want, data)
			}
		}
		if strings.Contains(string(data), "ownerReferences") {
			t.Errorf("the subset expectation was rewritten as the whole child:\n%s", data)
		}
		if out, _, err := runCLI(t, "test", p); err != nil {
			t.Errorf("after --update: %v\n%s", err, out)
		}
	})
	t.Run("--run selects tests by name", func(t *testing.T) {
		out, _, err := runCLI(t, "test", "--run", "^nothing$", file(t, "nginx:1.0"))
		if err != nil || !strings.Contains(out, "\t0 tests\n") {
			t.Errorf("got %v:\n%s", err, out)
		}
	})
}
