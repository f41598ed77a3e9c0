package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// readmeFile extracts from the README the code block that follows the mention of a file name,
// as the walk-through writes them: "(`website.yaml`):" then a fenced block.
func readmeFile(t *testing.T, readme, name string) string {
	t.Helper()
	re := regexp.MustCompile("(?s)\\(`" + regexp.QuoteMeta(name) + "`\\)[^`]*?```yaml\\n(.*?)```")
	m := re.FindStringSubmatch(readme)
	if m == nil {
		t.Fatalf("README: no yaml block after (`%s`)", name)
	}
	// the blocks are indented under a list item
	lines := strings.Split(m[1], "\n")
	for i, l := range lines {
		lines[i] = strings.TrimPrefix(l, "   ")
	}
	return strings.Join(lines, "\n")
}

// TestReadmeWalkThrough runs steps 1 and 2 of the README's walk-through: its files validate and
// render to what it says.
func TestReadmeWalkThrough(t *testing.T) {
	data, err := os.ReadFile(filepath.Join(repo, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	for _, name := range []string{"website-crd.yaml", "website.yaml", "my-website.yaml"} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(readmeFile(t, string(data), name)), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	path := func(name string) string { return filepath.Join(dir, name) }
	if out, errOut, err := runCLI(t, "validate", path("website.yaml"), "--crd", path("website-crd.yaml")); err != nil {
		t.Fatalf("validate: %v\n%s%s", err, out, errOut)
	}
	out, errOut, err := runCLI(t, "render", "--policy", path("website.yaml"), "--parent", path("my-website.yaml"), "--crd", path("website-crd.yaml"))
	if err != nil {
		t.Fatalf("render: %v\n%s", err, errOut)
	}
	for _, want := range []string{"name: hello-content", "index.html: <h1>Hello</h1>", "bytes: 14", "waiting for ConfigMap"} {
		if !strings.Contains(out, want) {
			t.Errorf("render output lacks %q:\n%s", want, out)
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
