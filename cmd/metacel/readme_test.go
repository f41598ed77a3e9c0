package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"metacel.dev/metacel/test/mdblocks"
)

// readmeFile returns the README's code block that the walk-through names name: "(`website.yaml`):"
// then a fenced block.
func readmeFile(t *testing.T, readme, name string) string {
	t.Helper()
	blocks, err := mdblocks.Parse(readme)
	if err != nil {
		t.Fatalf("README: %v", err)
	}
	b, err := mdblocks.Named(blocks, name)
	if err != nil {
		t.Fatalf("README: %v", err)
	}
	return b.Text
}

// TestReadmeWalkThrough runs steps 1 and 2 of the README's walk-through: its policy is the one
// whose CRD `metacel crd` prints in testdata/crd, and its files validate and render to what it says.
func TestReadmeWalkThrough(t *testing.T) {
	data, err := os.ReadFile(filepath.Join(repo, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	for _, name := range []string{"website.yaml", "my-website.yaml"} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(readmeFile(t, string(data), name)), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	path := func(name string) string { return filepath.Join(dir, name) }
	if want, _ := os.ReadFile(crdInput("website.yaml")); readmeFile(t, string(data), "website.yaml") != string(want) {
		t.Errorf("the README's website.yaml differs from %s, whose CRD is golden", crdInput("website.yaml"))
	}
	crd, errOut, err := runCLI(t, "crd", path("website.yaml"))
	if err != nil {
		t.Fatalf("crd: %v\n%s", err, errOut)
	}
	if err := os.WriteFile(path("website-crd.yaml"), []byte(crd), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, crdArgs := range [][]string{nil, {"--crd", path("website-crd.yaml")}} {
		if out, errOut, err := runCLI(t, append([]string{"validate", path("website.yaml")}, crdArgs...)...); err != nil {
			t.Fatalf("validate %v: %v\n%s%s", crdArgs, err, out, errOut)
		}
		out, errOut, err := runCLI(t, append([]string{"render", "--policy", path("website.yaml"), "--parent", path("my-website.yaml")}, crdArgs...)...)
		if err != nil {
			t.Fatalf("render %v: %v\n%s", crdArgs, err, errOut)
		}
		for _, want := range []string{"name: hello-content", "index.html: <h1>Hello</h1>", "replicas: 1", "image: nginx:1.27", "bytes: 14", "waiting for Deployment default/hello\n"} {
			if !strings.Contains(out, want) {
				t.Errorf("render %v output lacks %q:\n%s", crdArgs, want, out)
			}
		}
	}
}

func TestNothingToCheckIsAnError(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "empty.yaml"), []byte("---\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, cmd := range []string{"validate", "rbac"} {
		t.Run(cmd, func(t *testing.T) {
			_, errOut, err := runCLI(t, cmd, dir)
			if err == nil || !strings.Contains(errOut+err.Error(), "no policy found") {
				t.Errorf("want 'no policy found', got %v: %s", err, errOut)
			}
		})
	}
}
