package main

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"unicode"
)

// The layout in docs/development.md names every package of the runtime, and each has a doc.go: a newcomer
// finds each package there and what it holds, and a new package cannot be added silently.
func TestTheLayoutListsEveryPackage(t *testing.T) {
	readme, err := os.ReadFile(filepath.Join("..", "..", "docs", "development.md"))
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
			t.Errorf("the layout in docs/development.md does not list %s", pkg)
		}
		if _, err := os.Stat(filepath.Join(dir, "doc.go")); err != nil {
			t.Errorf("%s has no doc.go", pkg)
		}
	}
}

// Every page of docs/ is linked from the README, which a newcomer reads first.
func TestTheReadmeLinksEveryDocsPage(t *testing.T) {
	readme, err := os.ReadFile(filepath.Join("..", "..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	pages, err := filepath.Glob(filepath.Join("..", "..", "docs", "*.md"))
	if err != nil || len(pages) == 0 {
		t.Fatalf("no docs pages: %v", err)
	}
	for _, page := range pages {
		if link := "](docs/" + filepath.Base(page) + ")"; !strings.Contains(string(readme), link) {
			t.Errorf("the README does not link %s", filepath.Base(page))
		}
	}
	if n := strings.Count(string(readme), "\n"); n >= 250 {
		t.Errorf("the README has %d lines: keep it under 250, move the rest into docs/", n)
	}
}

// Every relative link of the README and docs/ resolves: to a file that exists and, with an
// anchor, to a heading of that file (as GitHub names it).
func TestEveryDocumentationLinkResolves(t *testing.T) {
	link := regexp.MustCompile(`\]\(([^)\s]+)\)`)
	for _, file := range docFiles(t) {
		text, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range link.FindAllStringSubmatch(string(text), -1) {
			target := m[1]
			if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
				continue
			}
			path, anchor, _ := strings.Cut(target, "#")
			dest := file
			if path != "" {
				dest = filepath.Join(filepath.Dir(file), path)
			}
			body, err := os.ReadFile(dest)
			if err != nil {
				t.Errorf("%s: link %q: %v", filepath.Base(file), target, err)
				continue
			}
			if anchor != "" && !slices.Contains(headingAnchors(string(body)), anchor) {
				t.Errorf("%s: link %q: %s has no heading with that anchor", filepath.Base(file), target, filepath.Base(dest))
			}
		}
	}
}

// headingAnchors returns the anchors GitHub gives a Markdown text's headings: lowercased, spaces
// as hyphens, other punctuation dropped (code fences skipped).
func headingAnchors(markdown string) []string {
	var out []string
	inFence := false
	for line := range strings.SplitSeq(markdown, "\n") {
		trimmed := strings.TrimSpace(line)
		if strings.HasPrefix(trimmed, "```") {
			inFence = !inFence
		}
		if inFence || !strings.HasPrefix(line, "#") {
			continue
		}
		title := strings.ToLower(strings.TrimSpace(strings.TrimLeft(line, "#")))
		var b strings.Builder
		for _, r := range title {
			switch {
			case r == ' ':
				b.WriteRune('-')
			case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r):
				b.WriteRune(r)
			}
		}
		out = append(out, b.String())
	}
	return out
}
