package main

import (
	"fmt"
	"io"
	"strings"

	"metacel.dev/metacel/runtime/manifest"
	"metacel.dev/metacel/runtime/policy"
	"metacel.dev/metacel/runtime/policytest"
)

// policyFiles keeps the files that hold policies, so that a policy may share its folder with its
// CRD, its samples and its tests: each other file is skipped with a note saying what it holds. A
// file that holds a policy among other objects is kept, for its other objects to be reported; so
// is a file that is not YAML, for its syntax error to be.
func policyFiles(files []string, withCRDs bool, notes io.Writer) []string {
	var out []string
	for _, f := range files {
		heads, err := manifest.ReadHeads(f)
		if err != nil || holdsPolicy(heads, true) {
			out = append(out, f)
			continue
		}
		fmt.Fprintf(notes, "note: %s: skipped, not a policy: %s\n", f, notPolicy(heads, withCRDs))
	}
	return out
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

// holdsPolicy reports whether a document is a policy (kind CompositePolicy, or any kind of the
// metacel.dev group: a misspelt kind is then an error, not a skipped file), or a ConfigMap whose
// data holds one.
func holdsPolicy(heads []manifest.Head, configMaps bool) bool {
	for _, h := range heads {
		switch {
		case h.Kind == policy.Kind, strings.HasPrefix(h.APIVersion, "metacel.dev/"):
			return true
		case configMaps && h.APIVersion == "v1" && h.Kind == "ConfigMap":
			for _, v := range h.Data {
				if inner, err := manifest.Heads([]byte(v)); err == nil && holdsPolicy(inner, false) {
					return true
				}
			}
		}
	}
	return false
}
