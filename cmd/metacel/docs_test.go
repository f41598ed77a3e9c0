package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"

	"metacel.dev/metacel/runtime/apply"
	"metacel.dev/metacel/runtime/contract"
	"metacel.dev/metacel/test/mdblocks"
)

// docFiles are the documents whose examples are checked: the README and docs/*.md.
func docFiles(t *testing.T) []string {
	t.Helper()
	docs, err := filepath.Glob(filepath.Join(repo, "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	return append([]string{filepath.Join(repo, "README.md")}, docs...)
}

// languages are the code blocks' languages: YAML is checked, shell commands and program output
// are not. A block without a language is an error, so that no YAML escapes by omitting it.
var languages = map[string]bool{"yaml": true, "sh": false, "text": false}

// example is one YAML code block of a document, as parsed.
type example struct {
	mdblocks.Block
	where string // file:line of its fence
	kind  exampleKind
	docs  []map[string]any
}

type exampleKind string

const (
	fragmentExample exampleKind = "fragment" // marked <!-- fragment -->: parsed only
	policyExample   exampleKind = "policy"   // CompositePolicy documents: validated, rendered with their parents
	testExample     exampleKind = "test"     // a policy test file: run
	objectExample   exampleKind = "object"   // Kubernetes objects: a policy's parents are rendered
)

// TestEveryYAMLExampleOfTheDocsIsChecked checks the YAML examples of README.md and docs/*.md
// with the commands users run on them: each policy passes `metacel validate`, and renders
// (`metacel render`) each parent the same document gives for it, with no readyWhen error on the
// children it creates; each policy test passes `metacel test`. A block that is a part of a file
// is marked <!-- fragment --> and only parsed; any other block that is not a policy, a policy test
// or Kubernetes objects fails the test.
func TestEveryYAMLExampleOfTheDocsIsChecked(t *testing.T) {
	counts := map[exampleKind]int{}
	for _, file := range docFiles(t) {
		examples := docExamples(t, file)
		for _, ex := range examples {
			counts[ex.kind]++
			t.Run(ex.where, func(t *testing.T) { checkExample(t, ex, examples) })
		}
	}
	if counts[policyExample] == 0 || counts[testExample] == 0 {
		t.Fatalf("found %v: the README has policies and a policy test, so its blocks were not read", counts)
	}
	t.Logf("YAML examples: %d policies, %d policy tests, %d objects checked; %d fragments parsed only",
		counts[policyExample], counts[testExample], counts[objectExample], counts[fragmentExample])
}

// docExamples reads the YAML blocks of one document; a block without a known language, or one
// that is not YAML of a known kind, fails the test.
func docExamples(t *testing.T, file string) []example {
	t.Helper()
	text, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	blocks, err := mdblocks.Parse(string(text))
	if err != nil {
		t.Fatalf("%s: %v", file, err)
	}
	rel, _ := filepath.Rel(repo, file)
	var out []example
	for _, b := range blocks {
		ex := example{Block: b, where: fmt.Sprintf("%s:%d", rel, b.Line)}
		checked, known := languages[b.Lang()]
		switch {
		case !known:
			t.Errorf("%s: a code block's language (its fence's info string) must be one of yaml (checked), sh or text, not %q", ex.where, b.Info)
			continue
		case !checked:
			continue
		}
		if ex.docs, err = yamlDocuments(b.Text); err != nil {
			t.Errorf("%s: not YAML: %v", ex.where, err)
			continue
		}
		if ex.kind = kindOf(b, ex.docs); ex.kind == "" {
			t.Errorf("%s: neither a policy, a policy test nor Kubernetes objects: mark it %s if it is a part of one", ex.where, mdblocks.FragmentMark)
			continue
		}
		out = append(out, ex)
	}
	return out
}

func yamlDocuments(text string) ([]map[string]any, error) {
	dec := yaml.NewDecoder(strings.NewReader(text))
	var docs []map[string]any
	for {
		var doc map[string]any
		err := dec.Decode(&doc)
		if errors.Is(err, io.EOF) {
			return docs, nil
		}
		if err != nil {
			return nil, err
		}
		docs = append(docs, doc)
	}
}

func kindOf(b mdblocks.Block, docs []map[string]any) exampleKind {
	switch {
	case b.Fragment:
		return fragmentExample
	case len(docs) == 0:
		return ""
	case all(docs, func(d map[string]any) bool { return d["kind"] == "CompositePolicy" }):
		return policyExample
	case len(docs) == 1 && docs[0]["policy"] != nil && docs[0]["tests"] != nil:
		return testExample
	case all(docs, isObject):
		return objectExample
	}
	return ""
}

func all(docs []map[string]any, f func(map[string]any) bool) bool {
	for _, d := range docs {
		if !f(d) {
			return false
		}
	}
	return true
}

func isObject(d map[string]any) bool {
	meta, _ := d["metadata"].(map[string]any)
	return d["apiVersion"] != nil && d["kind"] != nil && meta["name"] != nil
}

func checkExample(t *testing.T, ex example, examples []example) {
	switch ex.kind {
	case policyExample:
		checkPolicy(t, ex, examples)
	case testExample:
		checkPolicyTest(t, ex)
	}
}

// checkPolicy validates a policy example and renders each parent the document gives for it.
func checkPolicy(t *testing.T, ex example, examples []example) {
	dir := t.TempDir()
	policy := writeExample(t, dir, ex, "policy.yaml")
	if out, errOut, err := runCLI(t, "validate", policy); err != nil {
		t.Fatalf("metacel validate: %v\n%s%s", err, out, errOut)
	}
	for _, parent := range parentsOf(ex, examples) {
		out, errOut, err := runCLI(t, "render", "--policy", policy, "--parent", writeExample(t, dir, parent, "parent.yaml"))
		if err != nil {
			t.Errorf("metacel render with the parent at %s: %v\n%s", parent.where, err, errOut)
		}
		if strings.Contains(out, contract.ReasonReadyWhenFailed) {
			t.Errorf("with the parent at %s, a readyWhen fails on the children render created (it must read what they may not have yet, their status, with optionals: child.?status.?...):\n%s", parent.where, out)
		}
	}
}

// parentsOf returns the object examples that are parents of a policy example: of its parent
// resource's apiVersion and of the kind its parentSchema declares.
func parentsOf(policy example, examples []example) []example {
	var out []example
	for _, ex := range examples {
		if ex.kind != objectExample {
			continue
		}
		for _, p := range policy.docs {
			if isParentOf(ex.docs[0], p) {
				out = append(out, ex)
				break
			}
		}
	}
	return out
}

func isParentOf(obj, policy map[string]any) bool {
	spec, _ := policy["spec"].(map[string]any)
	parent, _ := spec["parentResource"].(map[string]any)
	declared, _ := spec["parentSchema"].(map[string]any)
	return parent["apiVersion"] != nil && parent["apiVersion"] == obj["apiVersion"] &&
		declared["kind"] != nil && declared["kind"] == obj["kind"]
}

// checkPolicyTest runs a policy test example with `metacel test`. Its paths are relative to a
// file of test/policies/, as the seed policies' tests are: it runs from such a directory beside
// the repository's own (linked) directories.
func checkPolicyTest(t *testing.T, ex example) {
	root := t.TempDir()
	entries, err := os.ReadDir(repo)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if e.IsDir() && e.Name() != "test" && !strings.HasPrefix(e.Name(), ".") {
			abs, err := filepath.Abs(filepath.Join(repo, e.Name()))
			if err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink(abs, filepath.Join(root, e.Name())); err != nil {
				t.Fatal(err)
			}
		}
	}
	dir := filepath.Join(root, "test", "policies")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if out, errOut, err := runCLI(t, "test", writeExample(t, dir, ex, "example.yaml")); err != nil {
		t.Fatalf("metacel test: %v\n%s%s", err, out, errOut)
	}
}

// writeExample writes an example into dir under the name the document gives it, else fallback.
func writeExample(t *testing.T, dir string, ex example, fallback string) string {
	t.Helper()
	name := ex.Name
	if name == "" || strings.ContainsAny(name, `/\`) {
		name = fallback
	}
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, []byte(ex.Text), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestTheContractSaysHowChildrenAreDeleted holds docs/contract.md to the propagation policy the
// runtime deletes children with (apply.DeletePropagation).
func TestTheContractSaysHowChildrenAreDeleted(t *testing.T) {
	doc, err := os.ReadFile(filepath.Join(repo, "docs", "contract.md"))
	if err != nil {
		t.Fatal(err)
	}
	if want := "deletes a child with `propagationPolicy: " + string(apply.DeletePropagation) + "`"; !strings.Contains(string(doc), want) {
		t.Errorf("docs/contract.md does not say that metacel %s", want)
	}
}
