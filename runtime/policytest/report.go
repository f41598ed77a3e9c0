package policytest

import (
	"context"
	"fmt"
	"io"
	"strings"

	"metacel.dev/metacel/runtime/manifest"
)

// Run runs the test files of each path (a file, or a directory's *.yaml and *.yml files,
// recursively, hidden ones left out) and writes what happened as `go test -v` does: a
// "--- PASS: name" or "--- FAIL: name" line per test, with the failures' messages indented below,
// then per path "ok" or "FAIL" with the number of tests. It reports whether every test passed.
func Run(ctx context.Context, w io.Writer, paths []string, opts Options) (bool, error) {
	allPassed := true
	for _, p := range paths {
		files, err := manifest.Files(p, ".yaml", ".yml")
		if err != nil {
			return false, fmt.Errorf("read tests: %w", err)
		}
		if len(files) == 0 {
			return false, fmt.Errorf("%s: no test files (*.yaml, *.yml)", p)
		}
		passed, failed := 0, 0
		for _, f := range files {
			ok, bad := runAndPrint(ctx, w, f, opts)
			passed, failed = passed+ok, failed+bad
		}
		if failed > 0 {
			allPassed = false
			fmt.Fprintf(w, "FAIL\t%s\t%d of %d tests failed\n", p, failed, passed+failed)
		} else {
			fmt.Fprintf(w, "ok  \t%s\t%d tests\n", p, passed)
		}
	}
	return allPassed, nil
}

// runAndPrint runs one file and prints its reports; it returns how many tests passed and failed
// (a file that cannot run counts as one failure).
func runAndPrint(ctx context.Context, w io.Writer, file string, opts Options) (passed, failed int) {
	reports, err := runFile(ctx, file, opts)
	for _, r := range reports {
		switch {
		case r.Passed && r.Updated:
			fmt.Fprintf(w, "--- PASS: %s (expectations updated)\n", r.Name)
		case r.Passed:
			fmt.Fprintf(w, "--- PASS: %s\n", r.Name)
		default:
			fmt.Fprintf(w, "--- FAIL: %s\n", r.Name)
		}
		for _, m := range r.Messages {
			fmt.Fprintln(w, indent(m))
		}
		if r.Passed {
			passed++
		} else {
			failed++
		}
	}
	if err != nil {
		fmt.Fprintf(w, "--- FAIL: %s\n%s\n", file, indent(err.Error()))
		failed++
	}
	return passed, failed
}

func indent(s string) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	for i, l := range lines {
		lines[i] = "    " + l
	}
	return strings.Join(lines, "\n")
}
