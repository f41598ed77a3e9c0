package main

import (
	"go/ast"
	"go/parser"
	"go/token"
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

// The table "One home per concept" of docs/development.md says where each concept lives: every
// name it gives is declared (a top-level func, type, var or const, or a method T.M) in the file
// or package it names, so the table cannot drift from the code.
func TestEachConceptLivesWhereTheTableSays(t *testing.T) {
	doc, err := os.ReadFile(filepath.Join("..", "..", "docs", "development.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(doc), "## One home per concept")
	if !ok {
		t.Fatal(`docs/development.md has no section "One home per concept"`)
	}
	section, _, _ = strings.Cut(section, "\n## ")
	row := regexp.MustCompile("(?m)^\\| [^|]+ \\| `([^`]+)` \\| (.+) \\|$")
	rows := row.FindAllStringSubmatch(section, -1)
	if len(rows) < 10 {
		t.Fatalf("the table has %d rows, want one per concept (at least 10)", len(rows))
	}
	name := regexp.MustCompile("`([^`]+)`")
	for _, r := range rows {
		home := r[1]
		decls := declaredIn(t, filepath.Join("..", "..", filepath.FromSlash(home)))
		for _, m := range name.FindAllStringSubmatch(r[2], -1) {
			if !decls[m[1]] {
				t.Errorf("%s does not declare %s, which the table says is its home", home, m[1])
			}
		}
	}
}

// declaredIn returns the names declared at the top level of a Go file, or of a package's
// non-test files: funcs, types, vars, consts, and methods as T.M.
func declaredIn(t *testing.T, path string) map[string]bool {
	t.Helper()
	files := []string{path}
	if !strings.HasSuffix(path, ".go") {
		all, err := filepath.Glob(filepath.Join(path, "*.go"))
		if err != nil {
			t.Fatal(err)
		}
		files = slices.DeleteFunc(all, func(f string) bool { return strings.HasSuffix(f, "_test.go") })
	}
	if len(files) == 0 {
		t.Fatalf("%s: no Go file", path)
	}
	out := map[string]bool{}
	fset := token.NewFileSet()
	for _, file := range files {
		f, err := parser.ParseFile(fset, file, nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatalf("%s: %v", file, err)
		}
		for _, d := range f.Decls {
			switch d := d.(type) {
			case *ast.FuncDecl:
				out[receiverPrefix(d)+d.Name.Name] = true
			case *ast.GenDecl:
				for _, spec := range d.Specs {
					switch s := spec.(type) {
					case *ast.TypeSpec:
						out[s.Name.Name] = true
					case *ast.ValueSpec:
						for _, n := range s.Names {
							out[n.Name] = true
						}
					}
				}
			}
		}
	}
	return out
}

// receiverPrefix is "T." for a method of T or *T, "" for a function.
func receiverPrefix(d *ast.FuncDecl) string {
	if d.Recv == nil || len(d.Recv.List) == 0 {
		return ""
	}
	typ := d.Recv.List[0].Type
	if star, ok := typ.(*ast.StarExpr); ok {
		typ = star.X
	}
	switch x := typ.(type) {
	case *ast.IndexExpr:
		typ = x.X
	case *ast.IndexListExpr:
		typ = x.X
	}
	if id, ok := typ.(*ast.Ident); ok {
		return id.Name + "."
	}
	return ""
}
