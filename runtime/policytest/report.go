package policytest

import (
	"context"
	"fmt"
	"io"
	"strings"

	"metacel.dev/metacel/runtime/manifest"
	"metacel.dev/metacel/runtime/policy"
)

// Run runs the test files of each path (a file, or a directory's *.yaml and *.yml files,
// recursively, hidden ones left out) and writes what happened as `go test -v` does: a
// "--- PASS: name" or "--- FAIL: name" line per test, with the failures' messages indented below,
// then per path "ok" or "FAIL" with the number of tests. It reports whether every test passed.
//
// A file is a test file when its document is no Kubernetes object (IsTestFile): the policy, its
// CRD and its samples may live in the same folder, and are skipped with a note to opts.Notes. A
// skipped file that holds policies (policy.Holds) must parse, as the runtime would read it: if it
// does not, it fails as a test would, with its errors at their lines.
func Run(ctx context.Context, w io.Writer, paths []string, opts Options) (bool, error) {
	allPassed := true
	for _, p := range paths {
		files, policies, err := testFiles(p, opts.Notes)
		if err != nil {
			return false, err
		}
		passed, failed := 0, 0
		for _, f := range files {
			ok, bad := runAndPrint(ctx, w, f, opts)
			passed, failed = passed+ok, failed+bad
		}
		for _, f := range policies {
			if err := parsePolicies(f); err != nil {
				fmt.Fprintf(w, "--- FAIL: %s\n%s\n", f, indent(err.Error()))
				failed++
			}
		}
		if failed > 0 {
			allPassed = false
			fmt.Fprintf(w, "FAIL\t%s\t%d of %s failed\n", p, failed, plural(passed+failed, "test", "tests"))
		} else {
			fmt.Fprintf(w, "ok  \t%s\t%s\n", p, plural(passed, "test", "tests"))
		}
	}
	return allPassed, nil
}

// testFiles lists the test files of a path, and notes the files it skips: those holding
// Kubernetes objects, and empty ones; the skipped files that hold policies are listed apart. A
// file that is not YAML is listed as a test file, for its error to show.
func testFiles(path string, notes io.Writer) (tests, policies []string, err error) {
	if notes == nil {
		notes = io.Discard
	}
	files, err := manifest.Files(path, ".yaml", ".yml")
	if err != nil {
		return nil, nil, fmt.Errorf("read tests: %w", err)
	}
	for _, f := range files {
		heads, err := manifest.ReadHeads(f)
		if err != nil || IsTestFile(heads) {
			tests = append(tests, f)
			continue
		}
		if policy.Holds(heads) {
			policies = append(policies, f)
		}
		fmt.Fprintf(notes, "note: %s: skipped, not a test file: it holds %s, and a test file has no kind\n", f, manifest.Describe(heads))
	}
	if len(tests) == 0 {
		return nil, nil, fmt.Errorf("%s: no test files: a test file is a *.yaml or *.yml file whose document has policy and tests, and no apiVersion or kind", path)
	}
	return tests, policies, nil
}

// parsePolicies parses the policies of a file (policy.Parse: its YAML and fields, not its
// expressions, which its tests compile), for its errors at their lines.
func parsePolicies(file string) error {
	data, err := manifest.ReadInput(file)
	if err != nil {
		return err
	}
	_, err = policy.Parse(file, data)
	return err
}

// IsTestFile reports whether the documents of a file are those of a test file: one document, a
// mapping that is no Kubernetes object (no apiVersion, no kind). A test file with mistakes is
// still one, so that `metacel test` reports them.
func IsTestFile(heads []manifest.Head) bool {
	return len(heads) == 1 && !heads[0].IsObject() && len(heads[0].Keys) > 0
}

func plural(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return fmt.Sprintf("%d %s", n, many)
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
