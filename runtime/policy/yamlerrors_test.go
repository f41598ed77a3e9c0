package policy

import (
	"strings"
	"testing"
)

// TestAYAMLSyntaxErrorIsReportedAtItsMistake: go-yaml names the line where the parser's context
// began (children:, many lines above); the loader names the line and column of the mistake, in
// the file, and says what is wrong in words.
func TestAYAMLSyntaxErrorIsReportedAtItsMistake(t *testing.T) {
	policy := header + children // children: at line 12, apiVersion: v1 at 15, kind: Pod at 16
	tests := []struct {
		name   string
		policy string
		want   string // the whole error
	}{
		{"a key indented one space short",
			strings.Replace(policy, "        kind: Pod", "       kind: Pod", 1),
			`p.yaml:16:8: invalid YAML: line 16 is indented 7 spaces; expected 8 (like "apiVersion:" at line 15) or 6 (like "template:" at line 14)`},
		{"a key indented one space short, in a ConfigMap",
			configMap(strings.Replace(policy, "        kind: Pod", "       kind: Pod", 1)),
			`p.yaml:22:12: invalid YAML: line 22 is indented 11 spaces; expected 12 (like "apiVersion:" at line 21) or 10 (like "template:" at line 20)`},
		{"a key indented deeper than the line before, which has a value",
			strings.Replace(policy, "        kind: Pod", "          kind: Pod", 1),
			`p.yaml:16:11: invalid YAML: line 16 is indented 10 spaces; expected 8 (like "apiVersion:" at line 15) or 6 (like "template:" at line 14)`},
		{"a list item indented between two levels",
			policy + "    - id: other\n      expression: \"[]\"\n   - id: third\n",
			`p.yaml:21:4: invalid YAML: line 21 is indented 3 spaces; expected 4 (like "-" at line 19) or 2 (like "children:" at line 12)`},
		{"a tab in the indentation",
			strings.Replace(policy, "      template:", "\ttemplate:", 1),
			"p.yaml:14:1: invalid YAML: a tab at line 14 column 1: YAML indents with spaces only"},
		{"a tab after spaces, in a ConfigMap",
			configMap(strings.Replace(policy, "      template:", "  \t    template:", 1)),
			"p.yaml:20:7: invalid YAML: a tab at line 20 column 7: YAML indents with spaces only"},
		{"an unquoted template holding ': '",
			policy + "  status:\n    phase: ${has(children.pod) ? 'Running' : 'Pending'}\n",
			`p.yaml:20:44: invalid YAML: mapping values are not allowed in this context: a "${...}" template holding ": " must be quoted`},
		{"an unclosed quote",
			strings.Replace(policy, `name: "${parent.metadata.name}"`, `name: "${parent.metadata.name}`, 1),
			`p.yaml:18:17: invalid YAML: found unexpected end of stream: the quoted value that starts here is never closed`},
		{"text after a quoted value",
			strings.Replace(policy, `name: "${parent.metadata.name}"`, `name: "${parent.metadata.name}"-x`, 1),
			`p.yaml:18:42: invalid YAML: did not find expected key: the value goes on after its closing quote`},
		{"an unclosed list",
			header + "  children: [\n",
			"p.yaml:12:13: invalid YAML: did not find expected node content"},
		{"in the second document",
			policy + "---\n" + strings.Replace(policy, "        kind: Pod", "       kind: Pod", 1),
			`p.yaml:35:8: invalid YAML: line 35 is indented 7 spaces; expected 8 (like "apiVersion:" at line 34) or 6 (like "template:" at line 33)`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse("p.yaml", []byte(tc.policy))
			if err == nil || !strings.HasPrefix(err.Error(), tc.want) {
				t.Fatalf("got error:\n%v\nwant:\n%s", err, tc.want)
			}
		})
	}
}
