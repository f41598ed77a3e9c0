package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The README's layout names every package of the runtime, and each has a doc.go: a newcomer
// finds each package there and what it holds, and a new package cannot be added silently.
func TestTheReadmeLayoutListsEveryPackage(t *testing.T) {
	readme, err := os.ReadFile(filepath.Join("..", "..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	dirs, err := filepath.Glob(filepath.Join("..", "..", "runtime", "*"))
	if err != nil {
		t.Fatal(err)
	}
	for _, dir := range dirs {
		if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
			continue
		}
		pkg := "runtime/" + filepath.Base(dir)
		if !strings.Contains(string(readme), "| `"+pkg+"` |") {
			t.Errorf("the README's layout does not list %s", pkg)
		}
		if _, err := os.Stat(filepath.Join(dir, "doc.go")); err != nil {
			t.Errorf("%s has no doc.go", pkg)
		}
	}
}
