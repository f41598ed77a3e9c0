package main

import (
	"context"
	"slices"
	"testing"
)

// The fixture module testdata/house: runtime/a (4 files) imports runtime/b (3 files),
// cmd/house imports runtime/a; test/e2e, hack/tool and a_test.go import and declare what
// must not count.
func TestMeasureFixture(t *testing.T) {
	cases := []struct {
		name     string
		pkg      string
		from     string
		want     Facts
		wantTree []string
	}{
		{
			name: "the walk crosses packages and comes back",
			pkg:  "runtime/a",
			from: "runtime/a.(*Server).Sync",
			want: Facts{
				FileArrows: FileArrows{Package: "runtime/a", Files: 4, Arrows: 6, MutualPairs: 2},
				Walk:       Walk{Functions: 9, Files: 6, Packages: 2, PackageMoves: 4, ReturnsToFile: 7},
			},
			wantTree: []string{"(*Server).Sync", "(*Server).load", "helper", "Save", "open", "(*Store).Put", "(*Store).grow", "Store.Len", "Map"},
		},
		{
			name: "the walk stays in one package",
			pkg:  "runtime/b",
			from: "runtime/b.Save",
			want: Facts{
				FileArrows: FileArrows{Package: "runtime/b", Files: 3, Arrows: 1, MutualPairs: 0},
				Walk:       Walk{Functions: 5, Files: 2, Packages: 1, PackageMoves: 0, ReturnsToFile: 3},
			},
			wantTree: []string{"Save", "open", "(*Store).Put", "(*Store).grow", "Store.Len"},
		},
		{
			name: "a method of a value receiver calls nothing",
			pkg:  "runtime/b",
			from: "runtime/b.Store.Len",
			want: Facts{
				FileArrows: FileArrows{Package: "runtime/b", Files: 3, Arrows: 1, MutualPairs: 0},
				Walk:       Walk{Functions: 1, Files: 1, Packages: 1, PackageMoves: 0, ReturnsToFile: 0},
			},
			wantTree: []string{"Store.Len"},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := measure(context.Background(), options{dir: "testdata/house", pkg: tc.pkg, from: tc.from, typ: "runtime/b.Twin"})
			if err != nil {
				t.Fatal(err)
			}
			checkCounts(t, got, tc.want)
			if tree := treeFuncs(got.Walk.Tree); !slices.Equal(tree, tc.wantTree) {
				t.Errorf("walk tree %q, want %q", tree, tc.wantTree)
			}
		})
	}
}

// checkCounts compares every count; the module-wide ones are the same in every case.
func checkCounts(t *testing.T, got, want Facts) {
	t.Helper()
	counts := []struct {
		name      string
		got, want int
	}{
		{"packages under runtime/", got.Packages.Runtime, 2},
		{"packages under cmd/", got.Packages.Cmd, 1},
		{"packages", got.Packages.Total, 3},
		{"import arrows", got.ImportArrows, 2},
		{"largest struct's fields", got.LargestStruct.Fields, 4},
		{"largest struct's methods", got.LargestStruct.Methods, 3},
		{"most methods", got.MostMethods.Methods, 3},
		{"-type's fields", got.Struct.Fields, 4},
		{"-type's methods", got.Struct.Methods, 0},
		{"files of -pkg", got.FileArrows.Files, want.FileArrows.Files},
		{"file arrows", got.FileArrows.Arrows, want.FileArrows.Arrows},
		{"mutual file pairs", got.FileArrows.MutualPairs, want.FileArrows.MutualPairs},
		{"functions entered", got.Walk.Functions, want.Walk.Functions},
		{"files visited", got.Walk.Files, want.Walk.Files},
		{"packages visited", got.Walk.Packages, want.Walk.Packages},
		{"moves between packages", got.Walk.PackageMoves, want.Walk.PackageMoves},
		{"returns to a file already left", got.Walk.ReturnsToFile, want.Walk.ReturnsToFile},
	}
	for _, c := range counts {
		if c.got != c.want {
			t.Errorf("%s: %d, want %d", c.name, c.got, c.want)
		}
	}
	if got.LargestStruct.Name != "runtime/b.Store" {
		t.Errorf("largest struct %s, want runtime/b.Store (Twin ties on fields, has fewer methods)", got.LargestStruct.Name)
	}
	if got.MostMethods.Name != "runtime/b.Store" || got.Struct.Name != "runtime/b.Twin" {
		t.Errorf("most methods %s, -type %s: want runtime/b.Store, runtime/b.Twin", got.MostMethods.Name, got.Struct.Name)
	}
	if got.FileArrows.Package != want.FileArrows.Package {
		t.Errorf("-pkg %s, want %s", got.FileArrows.Package, want.FileArrows.Package)
	}
}

func treeFuncs(steps []WalkStep) []string {
	funcs := make([]string, len(steps))
	for i, s := range steps {
		funcs[i] = s.Func
	}
	return funcs
}

func TestParseFuncRef(t *testing.T) {
	cases := []struct {
		in   string
		want funcRef
		bad  bool
	}{
		{in: "runtime/controller.(*syncer).sync", want: funcRef{pkg: "runtime/controller", recv: "syncer", name: "sync"}},
		{in: "runtime/b.Store.Len", want: funcRef{pkg: "runtime/b", recv: "Store", name: "Len"}},
		{in: "runtime/b.Save", want: funcRef{pkg: "runtime/b", name: "Save"}},
		{in: "example.com/house/runtime/b.Save", want: funcRef{pkg: "example.com/house/runtime/b", name: "Save"}},
		{in: "runtime/b", bad: true},
		{in: "runtime/b.(*Store.Put", bad: true},
		{in: "runtime/b.Store.", bad: true},
	}
	for _, tc := range cases {
		got, err := parseFuncRef(tc.in)
		switch {
		case tc.bad && err == nil:
			t.Errorf("%s: %+v, want an error", tc.in, got)
		case !tc.bad && err != nil:
			t.Errorf("%s: %v", tc.in, err)
		case got != tc.want:
			t.Errorf("%s: %+v, want %+v", tc.in, got, tc.want)
		}
	}
}
