// Command housefacts measures the shape of the module's production code from its own imports
// and calls, so that a refactor can be judged by the same numbers taken before and after it.
// It only reads: it changes no file.
//
// Usage (from the module, or with -C a directory inside it):
//
//	go run ./hack/housefacts [-C dir] [-pkg runtime/controller] [-from 'runtime/controller.(*syncer).sync'] [-type runtime/controller.Controller] [-json] [-walk]
//
// # What is measured
//
// Production code: every package of the main module whose directory is not under test/ or
// hack/, made of the files `go list` selects for the host's GOOS and GOARCH with no build tag
// set (no _test.go file, no file behind a tag such as e2e; testdata/ is never a package).
//
// How the code is read: `go list -deps -export` names the packages, their files and imports;
// the production packages are parsed (go/parser) and type-checked from source (go/types), and
// every other package (the standard library, dependencies) is imported from the export data
// that `go list -export` leaves in the build cache (go/importer "gc" with a lookup). The types
// make the counts below exact where names alone would guess: which file declares the name a
// file uses, which method `c.x.y()` calls through a field, an embedded type or a pointer.
// golang.org/x/tools/go/packages would load the same, but it is only an indirect module of the
// graph, absent from go.sum: using it would add a requirement to go.mod for one tool, and the
// standard library suffices.
//
// The numbers, each computed as follows:
//
//   - packages: the production packages whose directory is runtime/ or cmd/ or under them.
//   - import arrows: the distinct pairs (P, Q) of production packages where P imports Q
//     (go list's Imports of P: its non-test files).
//   - file arrows (-pkg, a directory relative to the module root): the distinct ordered pairs of
//     files (A, B) of that package, A ≠ B, where an identifier in A refers (go/types Uses) to a
//     func, method, type, var or const declared at the top level of B; a method counts in the
//     file that declares it, and methods of interfaces, struct fields, labels and locals do not
//     count. Mutual pairs: the unordered pairs {A, B} with both A→B and B→A.
//   - largest struct: among the package-level named types whose underlying type is a struct, the
//     one with the most fields (an embedded field counts one, as does a blank one); ties go to
//     more methods, then to the name. Its methods: those declared with receiver T or *T
//     (methods promoted from embedded fields not counted). The struct with the most methods:
//     the same, ordered by methods first. The struct -type names (pkg.T): its fields and methods,
//     counted alike.
//   - walk (-from: pkg.Func, pkg.T.Method or pkg.(*T).Method, pkg relative to the module root):
//     a depth-first walk from that function over the calls in its body, then in the bodies of
//     the functions it reaches. A call is followed when its callee is a function or a method of
//     a concrete type declared, with a body, in a production package: f(), pkg.F(), x.M()
//     whatever x's route to M (field, embedding, pointer), T.M(x), a generic by its generic
//     declaration. Not followed: calls through an interface, calls of function values
//     (variables, fields, parameters), builtins, conversions, functions outside the module.
//     A body's calls are taken in the order of the called name in the source (`a(b())`: a,
//     then b; `x.f().g()`: f, then g); calls inside function literals count where the literal
//     is written, whether or when it runs (go, defer, a callback) not looked at. Each function
//     is entered once: a call to a function already entered is skipped. The walk leaves a
//     trail: the function entered, and again its caller after each return.
//     functions: the functions entered; files, packages: the distinct files and packages
//     declaring them; moves between packages: the consecutive steps of the trail in different
//     packages (entries and returns); returns to a file already left: in the trail's files, with
//     consecutive repeats collapsed, the steps whose file appeared earlier in it.
//
// -walk prints the walk's tree too (every function entered, indented by depth).
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"go/ast"
	"go/importer"
	"go/parser"
	"go/token"
	"go/types"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"text/tabwriter"
)

// options are the command's flags but -json and -walk.
type options struct {
	dir  string // a directory inside the module to measure
	pkg  string // the package whose file arrows are counted, relative to the module root
	from string // the function the walk starts from
	typ  string // the struct whose fields and methods are counted, pkg.T
}

func main() {
	opts := options{}
	var asJSON, showWalk bool
	flag.StringVar(&opts.dir, "C", ".", "a directory inside the module to measure")
	flag.StringVar(&opts.pkg, "pkg", "runtime/controller", "the package whose file arrows are counted, relative to the module root")
	flag.StringVar(&opts.from, "from", "runtime/controller.(*syncer).sync", "the function the walk starts from: pkg.Func, pkg.T.Method or pkg.(*T).Method")
	flag.StringVar(&opts.typ, "type", "runtime/controller.Controller", "the struct whose fields and methods are counted: pkg.T, pkg relative to the module root")
	flag.BoolVar(&asJSON, "json", false, "print JSON")
	flag.BoolVar(&showWalk, "walk", false, "print the walk's tree too")
	flag.Parse()

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	err := run(ctx, os.Stdout, opts, asJSON, showWalk)
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "housefacts:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, w io.Writer, opts options, asJSON, showWalk bool) error {
	facts, err := measure(ctx, opts)
	if err != nil {
		return err
	}
	if !showWalk {
		facts.Walk.Tree = nil
	}
	if asJSON {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(facts)
	}
	return printTable(w, facts)
}

// Facts are the numbers measured; the package doc says how each is computed.
type Facts struct {
	Module        string        `json:"module"`
	Packages      PackageCount  `json:"packages"`
	ImportArrows  int           `json:"importArrows"`
	FileArrows    FileArrows    `json:"fileArrows"`
	LargestStruct LargestStruct `json:"largestStruct"`
	MostMethods   LargestStruct `json:"mostMethods"`
	Struct        LargestStruct `json:"struct"`
	Walk          Walk          `json:"walk"`
}

// PackageCount counts the production packages under runtime/ and cmd/.
type PackageCount struct {
	Runtime int `json:"runtime"`
	Cmd     int `json:"cmd"`
	Total   int `json:"total"`
}

// FileArrows are the file-level arrows inside one package.
type FileArrows struct {
	Package     string `json:"package"`
	Files       int    `json:"files"`
	Arrows      int    `json:"arrows"`
	MutualPairs int    `json:"mutualPairs"`
	// Mutual names each mutual pair, "a.go <-> b.go", in order.
	Mutual []string `json:"mutual,omitempty"`
}

// LargestStruct is the struct type with the most fields.
type LargestStruct struct {
	Name    string `json:"name"`
	File    string `json:"file"`
	Fields  int    `json:"fields"`
	Methods int    `json:"methods"`
}

// Walk is the depth-first walk of the calls from one function.
type Walk struct {
	From          string     `json:"from"`
	Functions     int        `json:"functions"`
	Files         int        `json:"files"`
	Packages      int        `json:"packages"`
	PackageMoves  int        `json:"packageMoves"`
	ReturnsToFile int        `json:"returnsToFileAlreadyLeft"`
	Tree          []WalkStep `json:"tree,omitempty"`
}

// WalkStep is one function entered by the walk.
type WalkStep struct {
	Depth int    `json:"depth"`
	File  string `json:"file"`
	Func  string `json:"func"`
}

func measure(ctx context.Context, opts options) (Facts, error) {
	h, err := load(ctx, opts.dir)
	if err != nil {
		return Facts{}, err
	}
	arrows, err := h.fileArrows(opts.pkg)
	if err != nil {
		return Facts{}, err
	}
	walk, err := h.walkFrom(opts.from)
	if err != nil {
		return Facts{}, err
	}
	named, err := h.namedStruct(opts.typ)
	if err != nil {
		return Facts{}, err
	}
	return Facts{
		Module:        h.module,
		Packages:      h.countPackages(),
		ImportArrows:  h.importArrows(),
		FileArrows:    arrows,
		LargestStruct: h.largestStruct(larger),
		MostMethods:   h.largestStruct(moreMethods),
		Struct:        named,
		Walk:          walk,
	}, nil
}

func printTable(w io.Writer, f Facts) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fa, ls, wk := f.FileArrows, f.LargestStruct, f.Walk
	fmt.Fprintf(tw, "module\t%s (production code: no _test.go file, nothing under test/ or hack/)\n", f.Module)
	fmt.Fprintf(tw, "packages under runtime/ and cmd/\t%d (runtime/ %d, cmd/ %d)\n", f.Packages.Total, f.Packages.Runtime, f.Packages.Cmd)
	fmt.Fprintf(tw, "import arrows between own packages\t%d\n", f.ImportArrows)
	fmt.Fprintf(tw, "file arrows in %s\t%d between %d files, %d mutual pairs\n", fa.Package, fa.Arrows, fa.Files, fa.MutualPairs)
	fmt.Fprintf(tw, "largest struct\t%s: %d fields, %d methods (%s)\n", ls.Name, ls.Fields, ls.Methods, ls.File)
	mm, st := f.MostMethods, f.Struct
	fmt.Fprintf(tw, "struct with the most methods\t%s: %d fields, %d methods (%s)\n", mm.Name, mm.Fields, mm.Methods, mm.File)
	fmt.Fprintf(tw, "struct %s\t%d fields, %d methods (%s)\n", st.Name, st.Fields, st.Methods, st.File)
	fmt.Fprintf(tw, "walk from %s\t\n", wk.From)
	fmt.Fprintf(tw, "  functions entered\t%d\n", wk.Functions)
	fmt.Fprintf(tw, "  files visited\t%d\n", wk.Files)
	fmt.Fprintf(tw, "  packages visited\t%d\n", wk.Packages)
	fmt.Fprintf(tw, "  moves between packages\t%d\n", wk.PackageMoves)
	fmt.Fprintf(tw, "  returns to a file already left\t%d\n", wk.ReturnsToFile)
	if err := tw.Flush(); err != nil {
		return fmt.Errorf("write the table: %w", err)
	}
	for _, s := range wk.Tree {
		fmt.Fprintf(w, "%s%s  %s\n", strings.Repeat("  ", s.Depth), s.Func, s.File)
	}
	return nil
}

// house is the module's production code, parsed and type-checked.
type house struct {
	fset    *token.FileSet
	module  string                 // the module path
	root    string                 // the module's directory
	own     map[string]*ownPackage // the production packages by import path
	exports map[string]string      // every other package's export data file by import path
	gc      types.Importer         // imports the other packages from their export data
}

// ownPackage is one production package.
type ownPackage struct {
	path    string   // import path
	rel     string   // directory relative to the module root, "." for the root
	imports []string // import paths of its non-test files
	files   []string // its non-test Go files, absolute
	syntax  []*ast.File
	types   *types.Package
	info    *types.Info
}

// listedPackage is what `go list -json` says of one package.
type listedPackage struct {
	ImportPath string
	Dir        string
	GoFiles    []string
	CgoFiles   []string
	Export     string
	Imports    []string
	Module     *struct{ Main bool }
}

func load(ctx context.Context, dir string) (*house, error) {
	h := &house{fset: token.NewFileSet(), own: map[string]*ownPackage{}, exports: map[string]string{}}
	if err := h.findModule(ctx, dir); err != nil {
		return nil, err
	}
	production, err := h.productionPackages(ctx)
	if err != nil {
		return nil, err
	}
	if err := h.listDeps(ctx, production); err != nil {
		return nil, err
	}
	h.gc = importer.ForCompiler(h.fset, "gc", h.openExport)
	for _, path := range h.ownPaths() {
		if _, err := h.Import(path); err != nil {
			return nil, err
		}
	}
	return h, nil
}

func goList(ctx context.Context, dir string, args ...string) ([]byte, error) {
	cmd := exec.CommandContext(ctx, "go", append([]string{"list"}, args...)...)
	cmd.Dir = dir
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("go list %s: %w: %s", strings.Join(args, " "), err, bytes.TrimSpace(stderr.Bytes()))
	}
	return out, nil
}

func (h *house) findModule(ctx context.Context, dir string) error {
	out, err := goList(ctx, dir, "-m", "-f", "{{.Path}}\t{{.Dir}}")
	if err != nil {
		return err
	}
	path, root, ok := strings.Cut(strings.TrimSpace(string(out)), "\t")
	if !ok || strings.Contains(root, "\n") {
		return fmt.Errorf("%s is not inside one module: go list -m says %q", dir, out)
	}
	h.module, h.root = path, root
	return nil
}

// relDir is an import path of the module as a directory relative to the module root.
func (h *house) relDir(path string) string {
	if path == h.module {
		return "."
	}
	return strings.TrimPrefix(path, h.module+"/")
}

// isProduction says whether the package in directory rel is production code.
func isProduction(rel string) bool {
	top, _, _ := strings.Cut(rel, "/")
	return top != "test" && top != "hack"
}

func (h *house) productionPackages(ctx context.Context) ([]string, error) {
	out, err := goList(ctx, h.root, "-f", "{{.ImportPath}}", "./...")
	if err != nil {
		return nil, err
	}
	var production []string
	for _, path := range strings.Fields(string(out)) {
		if isProduction(h.relDir(path)) {
			production = append(production, path)
		}
	}
	if len(production) == 0 {
		return nil, fmt.Errorf("module %s has no production package", h.module)
	}
	return production, nil
}

// listDeps learns the production packages' files and imports, and where the export data of
// every package they depend on is.
func (h *house) listDeps(ctx context.Context, production []string) error {
	args := append([]string{"-deps", "-export", "-json=ImportPath,Dir,GoFiles,CgoFiles,Export,Imports,Module"}, production...)
	out, err := goList(ctx, h.root, args...)
	if err != nil {
		return err
	}
	dec := json.NewDecoder(bytes.NewReader(out))
	for {
		var lp listedPackage
		if err := dec.Decode(&lp); errors.Is(err, io.EOF) {
			return nil
		} else if err != nil {
			return fmt.Errorf("read go list's output: %w", err)
		}
		if err := h.add(lp); err != nil {
			return err
		}
	}
}

func (h *house) add(lp listedPackage) error {
	rel := h.relDir(lp.ImportPath)
	if lp.Module == nil || !lp.Module.Main || !isProduction(rel) {
		h.exports[lp.ImportPath] = lp.Export
		return nil
	}
	if len(lp.CgoFiles) > 0 {
		return fmt.Errorf("%s: cgo files are not read", lp.ImportPath)
	}
	p := &ownPackage{path: lp.ImportPath, rel: rel, imports: lp.Imports}
	for _, name := range lp.GoFiles {
		p.files = append(p.files, filepath.Join(lp.Dir, name))
	}
	h.own[lp.ImportPath] = p
	return nil
}

func (h *house) openExport(path string) (io.ReadCloser, error) {
	file, ok := h.exports[path]
	if !ok || file == "" {
		return nil, fmt.Errorf("no export data for %s", path)
	}
	f, err := os.Open(file)
	if err != nil {
		return nil, fmt.Errorf("export data of %s: %w", path, err)
	}
	return f, nil
}

// Import makes house a types.Importer: a production package is type-checked from source
// (once), any other is read from its export data.
func (h *house) Import(path string) (*types.Package, error) {
	p, ok := h.own[path]
	if !ok {
		return h.gc.Import(path)
	}
	if p.types == nil {
		if err := h.check(p); err != nil {
			return nil, err
		}
	}
	return p.types, nil
}

func (h *house) check(p *ownPackage) error {
	for _, file := range p.files {
		f, err := parser.ParseFile(h.fset, file, nil, parser.SkipObjectResolution)
		if err != nil {
			return fmt.Errorf("parse: %w", err)
		}
		p.syntax = append(p.syntax, f)
	}
	p.info = &types.Info{
		Defs:       map[*ast.Ident]types.Object{},
		Uses:       map[*ast.Ident]types.Object{},
		Selections: map[*ast.SelectorExpr]*types.Selection{},
	}
	conf := types.Config{Importer: h, Sizes: types.SizesFor("gc", runtime.GOARCH)}
	pkg, err := conf.Check(p.path, h.fset, p.syntax, p.info)
	if err != nil {
		return fmt.Errorf("type-check %s: %w", p.path, err)
	}
	p.types = pkg
	return nil
}

// ownPaths are the production packages' import paths, sorted.
func (h *house) ownPaths() []string {
	paths := make([]string, 0, len(h.own))
	for path := range h.own {
		paths = append(paths, path)
	}
	slices.Sort(paths)
	return paths
}

// relFile is a file's name relative to the module root.
func (h *house) relFile(pos token.Pos) string {
	name := h.fset.Position(pos).Filename
	if rel, err := filepath.Rel(h.root, name); err == nil {
		return filepath.ToSlash(rel)
	}
	return name
}

func (h *house) countPackages() PackageCount {
	var c PackageCount
	for _, p := range h.own {
		switch {
		case p.rel == "runtime" || strings.HasPrefix(p.rel, "runtime/"):
			c.Runtime++
		case p.rel == "cmd" || strings.HasPrefix(p.rel, "cmd/"):
			c.Cmd++
		}
	}
	c.Total = c.Runtime + c.Cmd
	return c
}

func (h *house) importArrows() int {
	n := 0
	for _, p := range h.own {
		for _, imp := range p.imports {
			if _, ok := h.own[imp]; ok {
				n++
			}
		}
	}
	return n
}

// filePair is an arrow from one file to another.
type filePair struct{ from, to string }

func (h *house) fileArrows(rel string) (FileArrows, error) {
	p, ok := h.own[h.importPath(rel)]
	if !ok {
		return FileArrows{}, fmt.Errorf("-pkg %s: no production package there", rel)
	}
	arrows := map[filePair]bool{}
	for _, f := range p.syntax {
		from := h.relFile(f.FileStart)
		ast.Inspect(f, func(n ast.Node) bool {
			if id, ok := n.(*ast.Ident); ok {
				if to, ok := h.topLevelFile(p, p.info.Uses[id]); ok && to != from {
					arrows[filePair{from, to}] = true
				}
			}
			return true
		})
	}
	var mutual []string
	for a := range arrows {
		if a.from < a.to && arrows[filePair{a.to, a.from}] {
			mutual = append(mutual, filepath.Base(a.from)+" <-> "+filepath.Base(a.to))
		}
	}
	slices.Sort(mutual)
	return FileArrows{Package: p.rel, Files: len(p.syntax), Arrows: len(arrows), MutualPairs: len(mutual), Mutual: mutual}, nil
}

// topLevelFile is the file of package p that declares obj at its top level, if it does: a
// func, a method of a concrete type, a type, a var or a const.
func (h *house) topLevelFile(p *ownPackage, obj types.Object) (string, bool) {
	if obj == nil || obj.Pkg() != p.types {
		return "", false
	}
	if fn, ok := obj.(*types.Func); ok {
		obj = fn.Origin()
		if recv := fn.Signature().Recv(); recv != nil && !types.IsInterface(recv.Type()) {
			return h.relFile(obj.Pos()), true
		}
	}
	if obj.Parent() != p.types.Scope() {
		return "", false
	}
	return h.relFile(obj.Pos()), true
}

// importPath is the import path of a package of the module named by its directory relative to
// the module root (or by its import path).
func (h *house) importPath(rel string) string {
	switch {
	case rel == "." || rel == h.module:
		return h.module
	case strings.HasPrefix(rel, h.module+"/"):
		return rel
	}
	return h.module + "/" + strings.Trim(rel, "/")
}

func (h *house) largestStruct(larger func(a, b LargestStruct) bool) LargestStruct {
	var best LargestStruct
	for _, path := range h.ownPaths() {
		p := h.own[path]
		for _, name := range p.types.Scope().Names() {
			s, ok := h.structFacts(p, p.types.Scope().Lookup(name))
			if ok && larger(s, best) {
				best = s
			}
		}
	}
	return best
}

func (h *house) structFacts(p *ownPackage, obj types.Object) (LargestStruct, bool) {
	tn, ok := obj.(*types.TypeName)
	if !ok || tn.IsAlias() {
		return LargestStruct{}, false
	}
	named, ok := tn.Type().(*types.Named)
	if !ok {
		return LargestStruct{}, false
	}
	st, ok := named.Underlying().(*types.Struct)
	if !ok {
		return LargestStruct{}, false
	}
	return LargestStruct{
		Name:    p.rel + "." + tn.Name(),
		File:    h.relFile(tn.Pos()),
		Fields:  st.NumFields(),
		Methods: named.NumMethods(),
	}, true
}

// larger orders structs by fields, then methods, then name (the first in name order wins).
func larger(a, b LargestStruct) bool { return before(a, b, a.Fields-b.Fields, a.Methods-b.Methods) }

// moreMethods orders structs by methods, then fields, then name (the first in name order wins).
func moreMethods(a, b LargestStruct) bool {
	return before(a, b, a.Methods-b.Methods, a.Fields-b.Fields)
}

// before reports whether a comes before b (b empty: always), by the first of the differences
// that is not zero (the larger first), then by name.
func before(a, b LargestStruct, diffs ...int) bool {
	if b.Name == "" {
		return true
	}
	for _, d := range diffs {
		if d != 0 {
			return d > 0
		}
	}
	return a.Name < b.Name
}

// namedStruct is the facts of the struct a -type value names (pkg.T).
func (h *house) namedStruct(ref string) (LargestStruct, error) {
	i := strings.LastIndex(ref, ".")
	if i < 0 {
		return LargestStruct{}, fmt.Errorf("-type %s: want pkg.T", ref)
	}
	p, ok := h.own[h.importPath(ref[:i])]
	if !ok {
		return LargestStruct{}, fmt.Errorf("-type %s: no production package %s", ref, ref[:i])
	}
	s, ok := h.structFacts(p, p.types.Scope().Lookup(ref[i+1:]))
	if !ok {
		return LargestStruct{}, fmt.Errorf("-type %s: no struct type %s there", ref, ref[i+1:])
	}
	return s, nil
}

// funcRef is a -from value taken apart.
type funcRef struct{ pkg, recv, name string }

// parseFuncRef reads pkg.Func, pkg.T.Method or pkg.(*T).Method.
func parseFuncRef(s string) (funcRef, error) {
	bad := fmt.Errorf("-from %q: want pkg.Func, pkg.T.Method or pkg.(*T).Method", s)
	slash := strings.LastIndex(s, "/")
	dot := strings.Index(s[slash+1:], ".")
	if dot < 0 {
		return funcRef{}, bad
	}
	ref := funcRef{pkg: s[:slash+1+dot]}
	rest := s[slash+1+dot+1:]
	if strings.HasPrefix(rest, "(") {
		recv, name, ok := strings.Cut(rest[1:], ").")
		if !ok {
			return funcRef{}, bad
		}
		ref.recv, ref.name = strings.TrimPrefix(recv, "*"), name
	} else if recv, name, ok := strings.Cut(rest, "."); ok {
		ref.recv, ref.name = recv, name
	} else {
		ref.name = rest
	}
	if !token.IsIdentifier(ref.name) || (ref.recv != "" && !token.IsIdentifier(ref.recv)) {
		return funcRef{}, bad
	}
	return ref, nil
}

// findFunc is the function or method a -from value names.
func (h *house) findFunc(from string) (*types.Func, error) {
	ref, err := parseFuncRef(from)
	if err != nil {
		return nil, err
	}
	p, ok := h.own[h.importPath(ref.pkg)]
	if !ok {
		return nil, fmt.Errorf("-from %s: no production package %s", from, ref.pkg)
	}
	obj := p.types.Scope().Lookup(ref.name)
	if ref.recv != "" {
		obj = methodOf(p.types.Scope().Lookup(ref.recv), ref.name)
	}
	fn, ok := obj.(*types.Func)
	if !ok {
		return nil, fmt.Errorf("-from %s: no such function", from)
	}
	return fn, nil
}

// methodOf is the method of that name declared on the named type tn, if any.
func methodOf(tn types.Object, name string) types.Object {
	named, ok := tn.(*types.TypeName)
	if !ok {
		return nil
	}
	t, ok := named.Type().(*types.Named)
	if !ok {
		return nil
	}
	for i := range t.NumMethods() {
		if m := t.Method(i); m.Name() == name {
			return m
		}
	}
	return nil
}

// funcDecl is a production function or method with a body.
type funcDecl struct {
	fn   *types.Func
	decl *ast.FuncDecl
	pkg  *ownPackage
	file string // relative to the module root
}

func (h *house) funcDecls() map[*types.Func]*funcDecl {
	decls := map[*types.Func]*funcDecl{}
	for _, p := range h.own {
		for _, f := range p.syntax {
			for _, d := range f.Decls {
				fd, ok := d.(*ast.FuncDecl)
				if !ok || fd.Body == nil {
					continue
				}
				if fn, ok := p.info.Defs[fd.Name].(*types.Func); ok {
					decls[fn] = &funcDecl{fn: fn, decl: fd, pkg: p, file: h.relFile(fd.Pos())}
				}
			}
		}
	}
	return decls
}

// walker walks the calls depth first, each function once.
type walker struct {
	decls   map[*types.Func]*funcDecl
	entered map[*types.Func]bool
	trail   []*funcDecl // the function entered, and its caller again after each return
	tree    []WalkStep
}

func (h *house) walkFrom(from string) (Walk, error) {
	fn, err := h.findFunc(from)
	if err != nil {
		return Walk{}, err
	}
	w := &walker{decls: h.funcDecls(), entered: map[*types.Func]bool{}}
	start, ok := w.decls[fn]
	if !ok {
		return Walk{}, fmt.Errorf("-from %s: it has no body", from)
	}
	w.enter(start, 0)
	return w.facts(from), nil
}

func (w *walker) enter(d *funcDecl, depth int) {
	w.entered[d.fn] = true
	w.trail = append(w.trail, d)
	w.tree = append(w.tree, WalkStep{Depth: depth, File: d.file, Func: funcName(d.fn)})
	for _, callee := range w.callees(d) {
		if w.entered[callee.fn] {
			continue
		}
		w.enter(callee, depth+1)
		w.trail = append(w.trail, d)
	}
}

// callees are the production functions d's body calls, in the order of the called names.
func (w *walker) callees(d *funcDecl) []*funcDecl {
	type call struct {
		pos    token.Pos
		callee *funcDecl
	}
	var calls []call
	ast.Inspect(d.decl.Body, func(n ast.Node) bool {
		ce, ok := n.(*ast.CallExpr)
		if !ok {
			return true
		}
		if name, fn := staticCallee(d.pkg.info, ce); fn != nil {
			if callee, ok := w.decls[fn.Origin()]; ok {
				calls = append(calls, call{name.Pos(), callee})
			}
		}
		return true
	})
	slices.SortStableFunc(calls, func(a, b call) int { return int(a.pos - b.pos) })
	callees := make([]*funcDecl, len(calls))
	for i, c := range calls {
		callees[i] = c.callee
	}
	return callees
}

// staticCallee is the function a call calls and the name it is called by, when the call is
// of a declared function or of a method of a concrete type: not through an interface, not
// of a function value.
func staticCallee(info *types.Info, ce *ast.CallExpr) (*ast.Ident, *types.Func) {
	fun := ast.Unparen(ce.Fun)
	switch f := fun.(type) {
	case *ast.IndexExpr: // an instantiated generic: f[T](x)
		fun = ast.Unparen(f.X)
	case *ast.IndexListExpr:
		fun = ast.Unparen(f.X)
	}
	var name *ast.Ident
	var obj types.Object
	switch f := fun.(type) {
	case *ast.Ident:
		name, obj = f, info.Uses[f]
	case *ast.SelectorExpr:
		name, obj = f.Sel, info.Uses[f.Sel]
		if sel, ok := info.Selections[f]; ok && sel.Kind() == types.FieldVal {
			return nil, nil // a function-valued field
		}
	default:
		return nil, nil
	}
	fn, ok := obj.(*types.Func)
	if !ok {
		return nil, nil // a conversion, a builtin, a function value
	}
	if recv := fn.Signature().Recv(); recv != nil && types.IsInterface(recv.Type()) {
		return nil, nil // a call through an interface
	}
	return name, fn
}

// funcName is F, T.M or (*T).M.
func funcName(fn *types.Func) string {
	recv := fn.Signature().Recv()
	if recv == nil {
		return fn.Name()
	}
	t := recv.Type()
	ptr, isPtr := t.(*types.Pointer)
	if isPtr {
		t = ptr.Elem()
	}
	typeName := types.TypeString(t, func(*types.Package) string { return "" })
	if isPtr {
		return "(*" + typeName + ")." + fn.Name()
	}
	return typeName + "." + fn.Name()
}

func (w *walker) facts(from string) Walk {
	files, pkgs := map[string]bool{}, map[string]bool{}
	for _, d := range w.trail {
		files[d.file], pkgs[d.pkg.path] = true, true
	}
	moves := 0
	for i := 1; i < len(w.trail); i++ {
		if w.trail[i].pkg != w.trail[i-1].pkg {
			moves++
		}
	}
	return Walk{
		From:          from,
		Functions:     len(w.entered),
		Files:         len(files),
		Packages:      len(pkgs),
		PackageMoves:  moves,
		ReturnsToFile: w.returnsToFileAlreadyLeft(),
		Tree:          w.tree,
	}
}

// returnsToFileAlreadyLeft counts, in the trail's files with consecutive repeats collapsed,
// the steps to a file that appeared earlier.
func (w *walker) returnsToFileAlreadyLeft() int {
	seen := map[string]bool{}
	returns, current := 0, ""
	for _, d := range w.trail {
		if d.file == current {
			continue
		}
		if seen[d.file] {
			returns++
		}
		seen[d.file], current = true, d.file
	}
	return returns
}
