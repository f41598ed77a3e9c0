package testpolicies

import (
	"embed"
	"fmt"
	"regexp"
	"strings"
)

//go:embed testdata/*.yaml
var files embed.FS

// Fills maps a placeholder's name (NAME for __NAME__ in a file) to the text that replaces it.
type Fills map[string]string

var placeholder = regexp.MustCompile(`__[A-Z][A-Z0-9_]*__`)

// YAML returns the policy of testdata/<name>.yaml without its leading comment lines, each
// placeholder filled. It panics, as regexp.MustCompile does, on a mistake in the test's own
// fixture: no such file, a fill the file has no placeholder for, or a placeholder left unfilled.
func YAML(name string, fills Fills) string {
	data, err := files.ReadFile("testdata/" + name + ".yaml")
	if err != nil {
		panic(fmt.Sprintf("testpolicies: no policy %q: %v", name, err))
	}
	text := withoutLeadingComments(string(data))
	for key, value := range fills {
		mark := "__" + key + "__"
		if !strings.Contains(text, mark) {
			panic(fmt.Sprintf("testpolicies: policy %q has no placeholder %s", name, mark))
		}
		text = strings.ReplaceAll(text, mark, value)
	}
	if left := placeholder.FindString(text); left != "" {
		panic(fmt.Sprintf("testpolicies: policy %q: placeholder %s is not filled", name, left))
	}
	return text
}

// withoutLeadingComments drops the comment lines a file starts with.
func withoutLeadingComments(text string) string {
	for strings.HasPrefix(text, "#") {
		_, rest, _ := strings.Cut(text, "\n")
		text = rest
	}
	return text
}
