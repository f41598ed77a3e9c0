package mdblocks

import (
	"reflect"
	"strings"
	"testing"
)

func TestParse(t *testing.T) {
	tests := []struct {
		name     string
		markdown string
		want     []Block
	}{
		{"a block under a list item loses the fence's indentation",
			"1. The policy (`a.yaml`) says:\n\n   ```yaml\n   a: 1\n     b: 2\n   ```\n",
			[]Block{{Line: 3, Info: "yaml", Name: "a.yaml", Text: "a: 1\n  b: 2\n"}}},
		{"the fragment mark is on the line before the fence",
			"<!-- fragment -->\n```yaml\nspec: {}\n```\n",
			[]Block{{Line: 2, Info: "yaml", Fragment: true, Text: "spec: {}\n"}}},
		{"a name followed by another code span names nothing",
			"(`a.yaml`) and `b`:\n```sh\nls\n```\n",
			[]Block{{Line: 2, Info: "sh", Text: "ls\n"}}},
		{"a name belongs to the next block only",
			"(`a.yaml`):\n```yaml\na: 1\n```\nthen\n```\nout\n```\n",
			[]Block{{Line: 2, Info: "yaml", Name: "a.yaml", Text: "a: 1\n"}, {Line: 6, Text: "out\n"}}},
		{"a longer fence holds a shorter one",
			"````text\n```yaml\n````\n",
			[]Block{{Line: 1, Info: "text", Text: "```yaml\n"}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Parse(tc.markdown)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("got  %+v\nwant %+v", got, tc.want)
			}
		})
	}
}

func TestAFenceLeftOpenIsAnError(t *testing.T) {
	_, err := Parse("text\n```yaml\na: 1\n")
	if err == nil || !strings.Contains(err.Error(), "line 2") {
		t.Errorf("got %v, want an error naming line 2", err)
	}
}
