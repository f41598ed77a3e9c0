package main

import (
	"fmt"
	"io"

	"metacel.dev/metacel/runtime/manifest"
	"metacel.dev/metacel/runtime/policy"
	"metacel.dev/metacel/runtime/policytest"
)

// splitPolicyFiles tells the files that hold policies (policy.Holds) from the others, so that a
// policy may share its folder with its CRD, its samples and its tests. A file that holds a policy
// among other objects is a policy file, for its other objects to be reported; so is a file that
// is not YAML, for its syntax error to be.
func splitPolicyFiles(files []string) (policies, others []string) {
	for _, f := range files {
		heads, err := manifest.ReadHeads(f)
		if err != nil || policy.Holds(heads) {
			policies = append(policies, f)
			continue
		}
		others = append(others, f)
	}
	return policies, others
}

// policyFiles keeps the files that hold policies (splitPolicyFiles); each other file is skipped
// with a note saying what it holds.
func policyFiles(files []string, withCRDs bool, notes io.Writer) []string {
	policies, others := splitPolicyFiles(files)
	noteSkipped(notes, others, withCRDs)
	return policies
}

// noteSkipped notes each file skipped as no policy, with what it holds.
func noteSkipped(notes io.Writer, files []string, withCRDs bool) {
	for _, f := range files {
		heads, _ := manifest.ReadHeads(f)
		fmt.Fprintf(notes, "note: %s: skipped, not a policy: %s\n", f, notPolicy(heads, withCRDs))
	}
}

// notPolicy says what a file holds instead of a policy.
func notPolicy(heads []manifest.Head, withCRDs bool) string {
	if policytest.IsTestFile(heads) {
		return "it is a test file (metacel test runs it)"
	}
	what := "it holds " + manifest.Describe(heads)
	for _, h := range heads {
		if h.Kind == "CustomResourceDefinition" && !withCRDs {
			return what + " (give it with --crd to type the policy by it)"
		}
	}
	return what
}
