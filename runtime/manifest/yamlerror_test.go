package manifest

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"

	yamlv3 "go.yaml.in/yaml/v3"
)

// parseV3 decodes every document of data as the policy loader does (go-yaml v3).
func parseV3(data []byte) error {
	dec := yamlv3.NewDecoder(bytes.NewReader(data))
	for {
		var n yamlv3.Node
		if err := dec.Decode(&n); errors.Is(err, io.EOF) {
			return nil
		} else if err != nil {
			return err
		}
	}
}

// TestAYAMLErrorIsLocatedAtItsMistake: whatever line go-yaml names (v3: the line before its
// context's; v2: its context's), the error names the line and column of the mistake, in words.
func TestAYAMLErrorIsLocatedAtItsMistake(t *testing.T) {
	tests := []struct {
		name, yaml string
		want       string // Error()
	}{
		{"a key indented one space short",
			"a:\n  b:\n    c: 1\n   d: 2\n",
			`4:4: invalid YAML: line 4 is indented 3 spaces; expected 4 (like "c:" at line 3) or 2 (like "b:" at line 2)`},
		{"a key indented deeper after a value",
			"a:\n  b: 1\n    c: 2\n",
			`3:5: invalid YAML: line 3 is indented 4 spaces; expected 2 (like "b:" at line 2) or 0 (like "a:" at line 1)`},
		{"a key of a list item indented short",
			"a:\n  - name: x\n   image: y\n",
			`3:4: invalid YAML: line 3 is indented 3 spaces; expected 4 (like "name:" at line 2) or 2 (like "-" at line 2)`},
		{"a list item indented short",
			"a:\n  - x\n  - y\n - z\n",
			`4:2: invalid YAML: line 4 is indented 1 space; expected 2 (like "-" at line 3) or 0 (like "a:" at line 1)`},
		{"a block scalar's line indented short",
			"a:\n  b: |\n    line1\n   line2\n",
			`4:4: invalid YAML: line 4 is indented 3 spaces; expected 4 (like "line1" at line 3) or 2 (like "b:" at line 2)`},
		{"a mistake after a multi-line flow list",
			"a:\n  b: [1,\n    2]\n  c:\n d: 1\n",
			`5:2: invalid YAML: line 5 is indented 1 space; expected 2 (like "c:" at line 4) or 0 (like "a:" at line 1)`},
		{"a tab", "a:\n  b: 1\n\tc: 2\n", "3:1: invalid YAML: a tab at line 3 column 1: YAML indents with spaces only"},
		{"a tab after spaces", "a:\n  c:\n  \t- x\n", "3:3: invalid YAML: a tab at line 3 column 3: YAML indents with spaces only"},
		{"a key among list items",
			"a:\n  b:\n    - x\n    c: 1\n",
			`4:5: invalid YAML: did not find expected '-' indicator: line 4 is indented like the list item at line 3 but is not one`},
		{"a list item among keys", "a: 1\n- b\n",
			`2:1: invalid YAML: did not find expected key: line 2 is a list item ("- ") where the mapping of line 1 has its keys`},
		{"an unquoted template holding ': '", "a:\n  b: ${x ? 'a' : 'b'}\n",
			`2:16: invalid YAML: mapping values are not allowed in this context: a "${...}" template holding ": " must be quoted`},
		{"a value holding ': '", "a: b: c\n",
			`1:5: invalid YAML: mapping values are not allowed in this context: a value holding ": " must be quoted`},
		{"an unclosed quote", "a:\n  b: \"hello\n  c: 3\n",
			"2:6: invalid YAML: found unexpected end of stream: the quoted value that starts here is never closed"},
		{"an unclosed list", "a:\n  b: [1, 2\n  c: 3\n",
			`2:6: invalid YAML: did not find expected ',' or ']': the '[' opened here is never closed`},
		{"an unquoted template in a flow map", "a:\n  metadata: {name: ${parent.metadata.name}}\n",
			`2:20: invalid YAML: did not find expected ',' or '}': a "${...}" template inside a flow map or list ({...} or [...]) must be quoted`},
		{"a quoted template in a flow map left open", "a:\n  metadata: {name: \"${x}\"\n  c: 3\n",
			`2:13: invalid YAML: did not find expected ',' or '}': the '{' opened here is never closed`},
		{"text after a quoted value", "a:\n  b: \"x\" y\n",
			"2:10: invalid YAML: did not find expected key: the value goes on after its closing quote"},
		{"a backquote", "a: `x`\n", "1:4: invalid YAML: found character that cannot start any token: a value cannot start with '`' unless quoted"},
		{"in a later document", "a: b\n---\nc:\n  d: 1\n e: 2\n",
			`5:2: invalid YAML: line 5 is indented 1 space; expected 2 (like "d:" at line 4) or 0 (like "c:" at line 3)`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			data := []byte(tc.yaml)
			e := LocateSyntaxError(data, parseV3(data), parseV3)
			if e == nil {
				t.Fatalf("not located: %v", parseV3(data))
			}
			if got := e.Error(); len(got) < len(tc.want) || got[:len(tc.want)] != tc.want {
				t.Errorf("got  %s\nwant %s", got, tc.want)
			}
		})
	}
}

// TestAManifestYAMLErrorIsReportedAtItsLine: render's --parent, --related and --crd files (read
// through sigs.k8s.io/yaml, go-yaml v2) name the file, line and column of the mistake.
func TestAManifestYAMLErrorIsReportedAtItsLine(t *testing.T) {
	tests := []struct {
		name, yaml, want string
	}{
		{"indentation in the second document",
			"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\n---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: b\n   namespace: x\n",
			`f.yaml:10:4: invalid YAML: line 10 is indented 3 spaces; expected 2 (like "name:" at line 9) or 0 (like "metadata:" at line 8)`},
		{"a tab", "apiVersion: v1\nkind: ConfigMap\nmetadata:\n\tname: a\n",
			"f.yaml:4:1: invalid YAML: a tab at line 4 column 1: YAML indents with spaces only"},
		{"an unclosed quote, which go-yaml v2 places past the end",
			"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: \"a\ndata: {}\n",
			"f.yaml:4:9: invalid YAML: found unexpected end of stream: the quoted value that starts here is never closed"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			file := filepath.Join(t.TempDir(), "f.yaml")
			if err := os.WriteFile(file, []byte(tc.yaml), 0o600); err != nil {
				t.Fatal(err)
			}
			_, err := ReadFile(file)
			if err == nil {
				t.Fatal("want an error")
			}
			if got, want := err.Error(), filepath.Dir(file)+string(filepath.Separator)+tc.want; got != want {
				t.Errorf("got  %s\nwant %s", got, want)
			}
		})
	}
}

func TestReadSplitsDocumentsAsKubectlDoes(t *testing.T) {
	data := "# leading comment\n---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\n--- # a comment\n---\n" +
		"apiVersion: v1\nkind: List\nitems:\n- {apiVersion: v1, kind: ConfigMap, metadata: {name: b}}\n- {apiVersion: v1, kind: ConfigMap, metadata: {name: c}}\n"
	objs, err := read([]byte(data))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, o := range objs {
		names = append(names, o.GetName())
	}
	if len(names) != 3 || names[0] != "a" || names[1] != "b" || names[2] != "c" {
		t.Errorf("got %v, want [a b c]", names)
	}
	if _, err := read([]byte("a: 1\n--- b\n")); err == nil || err.Error() != "line 2: invalid YAML document separator: b" {
		t.Errorf("got %v", err)
	}
}

func FuzzLocateSyntaxError(f *testing.F) {
	f.Add([]byte("a:\n  b:\n    c: 1\n   d: 2\n"))
	f.Add([]byte("a:\n  - name: x\n   image: \"y\n\tz: [1, {\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		if e := LocateSyntaxError(data, parseV3(data), parseV3); e != nil && (e.Line < 1 || e.Column < 0 || e.Message() == "") {
			t.Fatalf("bad location %+v", e)
		}
		_, _ = read(data)
	})
}

// A key a mapping holds twice is an error at its second line; a merge key (<<) may repeat, each
// merging its own map, as sigs.k8s.io/yaml reads it.
func TestADuplicateKeyIsAnErrorButNotARepeatedMerge(t *testing.T) {
	tests := []struct {
		name, doc, want string
	}{
		{"a key twice", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\ndata:\n  a: \"1\"\n  a: \"2\"\n",
			`6:3: invalid YAML: duplicate key "a" (first at line 5): keep one`},
		{"two merges", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\ndefs:\n  a: &a {x: \"1\"}\n  b: &b {y: \"2\"}\ndata:\n  <<: *a\n  <<: *b\n", ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := read([]byte(tc.doc))
			got := ""
			if err != nil {
				got = err.Error()
			}
			if got != tc.want {
				t.Errorf("read: %q, want %q", got, tc.want)
			}
		})
	}
}
