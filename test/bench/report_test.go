//go:build e2e

package main

import (
	"strings"
	"testing"
)

// A report of a metacel binary given with -metacel names that binary: its commit is not known,
// and the work tree may have moved on during the run (a report named the HEAD at its end, which
// was not the binary's commit).
func TestAReportNamesTheBinaryGiven(t *testing.T) {
	repo, err := repoRoot()
	if err != nil {
		t.Fatal(err)
	}
	b := &bench{repo: repo, o: options{metacelBin: "/tmp/bins/metacel-x", handwrittenBin: "/tmp/bins/handwritten-x"}}
	if err := b.buildMain(t.Context()); err != nil {
		t.Fatal(err)
	}
	header := b.header("a report", "defaults", false)
	if want := "- metacel: the binary /tmp/bins/metacel-x given with -metacel (the work tree at the start: "; !strings.Contains(header, want) {
		t.Errorf("the header:\n%s\nwant it to hold %q", header, want)
	}
}
