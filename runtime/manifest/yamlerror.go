package manifest

import (
	"bytes"
	"fmt"
	"regexp"
	"sort"
	"strings"
)

// SyntaxError is a YAML syntax error located at the mistake. go-yaml (v2 and v3, and so
// sigs.k8s.io/yaml) says only "yaml: line N: problem", where N is the line at which the parser's
// context began (the mapping the mistake breaks, often many lines above it; v3's is even one
// line short), and drops the position of the problem itself. LocateSyntaxError finds it again.
type SyntaxError struct {
	// Line and Column locate the mistake, counted from 1; Column is 0 when unknown.
	Line, Column int
	// Problem is the parser's description of it, without a line: "did not find expected key".
	Problem string

	kind syntaxKind
	// indent is the mistaken line's indentation in spaces; expected the indentations it could
	// have had (indentationProblem only).
	indent   int
	expected []level
	// other is the line another message refers to (listItemExpected, keyExpected).
	other int
	// hint says how to fix it, when known.
	hint string
}

type syntaxKind int

const (
	otherProblem syntaxKind = iota
	tabIndent
	indentationProblem
	listItemExpected // a line at the indentation of a list's items that is not an item
	keyExpected      // a list item where a mapping expects a key
	duplicate        // a key a mapping holds twice (Problem: the key; other: its first line)
)

// level is an indentation the block structure allows at some point: that of an open mapping's
// keys or a list's items, the line that has it and what stands there.
type level struct {
	spaces, line int
	what         string
}

// Error is the message prefixed with its position, "line:column: invalid YAML: message", so that
// "file:" + Error() reads as every other located error.
func (e *SyntaxError) Error() string {
	pos := fmt.Sprint(e.Line)
	if e.Column > 0 {
		pos += fmt.Sprintf(":%d", e.Column)
	}
	return pos + ": invalid YAML: " + e.Message()
}

// Message says what is wrong and how to fix it, naming lines (but not the file).
func (e *SyntaxError) Message() string {
	switch e.kind {
	case duplicate:
		return fmt.Sprintf("duplicate key %q (first at line %d): keep one", e.Problem, e.other)
	case tabIndent:
		return fmt.Sprintf("a tab at line %d column %d: YAML indents with spaces only", e.Line, e.Column)
	case indentationProblem:
		return fmt.Sprintf("line %d is indented %s; expected %s", e.Line, spaces(e.indent), describeLevels(e.expected))
	case listItemExpected:
		return fmt.Sprintf("%s: line %d is indented like the list item at line %d but is not one: start it with \"- \", or indent it like the key that holds the list",
			e.Problem, e.Line, e.other)
	case keyExpected:
		return fmt.Sprintf("%s: line %d is a list item (\"- \") where the mapping of line %d has its keys: indent the list under a key (\"key:\" on the line before it)",
			e.Problem, e.Line, e.other)
	}
	if e.hint != "" {
		return e.Problem + ": " + e.hint
	}
	return e.Problem
}

func describeLevels(ls []level) string {
	parts := make([]string, len(ls))
	for i, l := range ls {
		parts[i] = fmt.Sprintf("%d (like %q at line %d)", l.spaces, l.what, l.line)
	}
	return strings.Join(parts, " or ")
}

func spaces(n int) string {
	if n == 1 {
		return "1 space"
	}
	return fmt.Sprintf("%d spaces", n)
}

// Shift moves the error by lines and columns: data was found at that offset inside a larger file
// (a policy in a ConfigMap's block scalar, whose lines are indented columns more in the file).
func (e *SyntaxError) Shift(lines, columns int) {
	e.Line += lines
	if e.other > 0 {
		e.other += lines
	}
	if e.Column > 0 {
		e.Column += columns
	}
	e.indent += columns
	for i := range e.expected {
		e.expected[i].line += lines
		e.expected[i].spaces += columns
	}
}

// LocateSyntaxError finds where in data the error err, which parse returned for data, lies. It
// returns nil when err does not come from some line of data.
//
// The rule: the mistake is on the first line at which the document stops being YAML, the
// shortest prefix of whole lines that fails with the very same error (same words, same context
// line). A prefix cut before the mistake parses, or fails differently (an unclosed bracket); one
// that holds it fails as the whole does, whatever follows, since the parser stops there. The
// column is the shortest prefix of that line that still fails so, or the rule of the problem: the
// tab in the indentation, the start of a mis-indented line, the bracket or quote left open.
func LocateSyntaxError(data []byte, err error, parse func([]byte) error) *SyntaxError {
	if err == nil {
		return nil
	}
	target := err.Error()
	same := func(prefix []byte) bool {
		e := parse(prefix)
		return e != nil && e.Error() == target
	}
	starts := lineStarts(data)
	n := len(starts) - 1 // lines
	if n == 0 || !same(data) {
		return nil
	}
	// the shortest failing prefix of whole lines, by bisection: the failure is monotone in the
	// prefix's length (see above)
	line := 1 + sort.Search(n, func(i int) bool { return same(data[:starts[i+1]]) })
	text := strings.TrimRight(string(data[starts[line-1]:starts[line]]), "\r\n")
	problem := parserProblem(target)
	if strings.Contains(problem, "end of stream") && openQuote(text) == 0 {
		line, text = unclosedQuoteLine(data, starts, line, text) // go-yaml v2 counts past the end
	}
	e := &SyntaxError{Line: line, Problem: problem}
	diagnose(e, text, strings.Split(string(data[:starts[line-1]]), "\n"))
	if e.kind == otherProblem {
		column := columnOf(text, func(c int) bool { return same(data[:starts[line-1]+c]) })
		if column == 0 {
			column = e.indent + 1
		}
		e.hint, e.Column = hintFor(e.Problem, text, column)
	}
	return e
}

// lineStarts returns the offset of every line of data, and len(data) last.
func lineStarts(data []byte) []int {
	starts := []int{0}
	for i := 0; i < len(data); {
		j := bytes.IndexByte(data[i:], '\n')
		if j < 0 {
			break
		}
		i += j + 1
		if i < len(data) {
			starts = append(starts, i)
		}
	}
	return append(starts, len(data))
}

// yamlLineRE is go-yaml's prefix of a located message.
var yamlLineRE = regexp.MustCompile(`^(?:yaml: )?(?:line \d+: )?`)

// parserProblem strips go-yaml's prefix and line from its message.
func parserProblem(msg string) string {
	return yamlLineRE.ReplaceAllString(msg, "")
}

// columnOf returns the column (from 1) of the shortest prefix of line text for which fails
// holds, or 0.
func columnOf(text string, fails func(c int) bool) int {
	c := sort.Search(len(text), func(i int) bool { return fails(i + 1) })
	if c == len(text) {
		return 0
	}
	return c + 1
}

// diagnose sets the kind of e from its line's text and the lines before it.
func diagnose(e *SyntaxError, text string, before []string) {
	lead := text[:len(text)-len(strings.TrimLeft(text, " \t"))]
	if i := strings.IndexByte(lead, '\t'); i >= 0 {
		e.kind, e.Column = tabIndent, i+1
		return
	}
	if strings.Contains(e.Problem, "tab character") {
		if l, c := lastTabIndent(before); l > 0 {
			e.Line, e.Column, e.kind = l, c, tabIndent
			return
		}
	}
	e.indent = len(lead)
	levels, opensBlock := openLevels(before)
	content := text[len(lead):]
	switch {
	case structural(e.Problem) && misindented(levels, opensBlock, e.indent):
		e.kind, e.Column, e.expected = indentationProblem, e.indent+1, nearest(levels, e.indent)
	case strings.Contains(e.Problem, "expected '-' indicator") && !strings.HasPrefix(content, "-"):
		if l := levelAt(levels, e.indent); l > 0 {
			e.kind, e.Column, e.other = listItemExpected, e.indent+1, l
		}
	case strings.Contains(e.Problem, "expected key") && isListItem(content):
		if l := levelAt(levels, e.indent); l > 0 {
			e.kind, e.Column, e.other = keyExpected, e.indent+1, l
		}
	}
}

// misindented reports whether a line indented spaces deep fits none of the open levels, nor is
// the first line of a block opened by the line before it.
func misindented(levels []level, opensBlock bool, spaces int) bool {
	if len(levels) == 0 || hasLevel(levels, spaces) {
		return false
	}
	return !opensBlock || spaces < levels[0].spaces
}

// structural reports whether a problem is one of the block structure, which a line indented
// where no block is open causes.
func structural(problem string) bool {
	for _, p := range []string{"expected key", "expected '-' indicator", "mapping values are not allowed", "block sequence entries are not allowed", "expected <document start>"} {
		if strings.Contains(problem, p) {
			return true
		}
	}
	return false
}

func isListItem(content string) bool { return content == "-" || strings.HasPrefix(content, "- ") }

// hintFor says how to fix a problem of one line, and where in it, given the column found so far.
func hintFor(problem, text string, column int) (string, int) {
	switch {
	case strings.Contains(problem, "mapping values are not allowed") && strings.Contains(text, "${"):
		return `a "${...}" template holding ": " must be quoted, as in key: "${c ? 'a' : 'b'}"`, column
	case strings.Contains(problem, "mapping values are not allowed"):
		return `a value holding ": " must be quoted, as in key: "a: b"`, column
	case strings.Contains(problem, "cannot start any token") && column > 0 && column <= len(text) && strings.ContainsRune("@`%", rune(text[column-1])):
		return fmt.Sprintf("a value cannot start with %q unless quoted", text[column-1]), column
	case strings.Contains(problem, "expected key") && afterQuotedValue(text) > 0:
		return "the value goes on after its closing quote: put all of it inside the quotes", afterQuotedValue(text)
	case strings.Contains(problem, "found unexpected end of stream"):
		if c := openQuote(text); c > 0 {
			return "the quoted value that starts here is never closed", c
		}
	case (strings.Contains(problem, "',' or ']'") || strings.Contains(problem, "',' or '}'")) && unquotedTemplate(text) > 0:
		return `a "${...}" template inside a flow map or list ({...} or [...]) must be quoted, as in {name: "${parent.metadata.name}"}: ` +
			`unquoted, its braces end the map`, unquotedTemplate(text)
	case strings.Contains(problem, "',' or ']'"), strings.Contains(problem, "',' or '}'"):
		if c := openBracket(text); c > 0 {
			return fmt.Sprintf("the %q opened here is never closed", text[c-1]), c
		}
	}
	return "", column
}

// unquotedTemplate returns the column of the first "${" of a line outside quotes, or 0.
func unquotedTemplate(text string) int {
	var quote byte
	for i := 0; i+1 < len(text); i++ {
		switch ch := text[i]; {
		case quote != 0:
			if ch == quote {
				quote = 0
			}
		case ch == '"' || ch == '\'':
			quote = ch
		case ch == '#' && (i == 0 || text[i-1] == ' '):
			return 0
		case ch == '$' && text[i+1] == '{':
			return i + 1
		}
	}
	return 0
}

// afterQuotedValue returns the column of what follows the closing quote of a line's quoted value
// ("key: "a" b" or "- 'a' b"), or 0 when nothing does.
func afterQuotedValue(text string) int {
	value := strings.TrimLeft(text, " ")
	value = strings.TrimLeft(strings.TrimPrefix(value, "-"), " ")
	if _, v, ok := strings.Cut(value, ": "); ok && !strings.HasPrefix(value, `"`) && !strings.HasPrefix(value, "'") {
		value = strings.TrimLeft(v, " ")
	}
	if value == "" || (value[0] != '"' && value[0] != '\'') {
		return 0
	}
	end := closingQuote(value)
	if end < 0 {
		return 0
	}
	rest := value[end+1:]
	trimmed := strings.TrimLeft(rest, " ")
	if trimmed == "" || (strings.HasPrefix(trimmed, "#") && len(trimmed) < len(rest)) {
		return 0
	}
	return len(text) - len(trimmed) + 1
}

// closingQuote returns the index of the quote that closes the one value starts with, or -1.
func closingQuote(value string) int {
	q := value[0]
	for i := 1; i < len(value); i++ {
		switch {
		case q == '"' && value[i] == '\\':
			i++
		case value[i] == q && q == '\'' && i+1 < len(value) && value[i+1] == '\'':
			i++
		case value[i] == q:
			return i
		}
	}
	return -1
}

// unclosedQuoteLine returns the last line up to line that leaves a quote open, with its text; or
// line and text when none does.
func unclosedQuoteLine(data []byte, starts []int, line int, text string) (int, string) {
	for l := line - 1; l >= 1; l-- {
		t := strings.TrimRight(string(data[starts[l-1]:starts[l]]), "\r\n")
		if openQuote(t) > 0 {
			return l, t
		}
	}
	return line, text
}

// openQuote returns the column of a quote that the line leaves open, or 0.
func openQuote(text string) int {
	open := 0
	var q byte
	for i := 0; i < len(text); i++ {
		switch c := text[i]; {
		case q == 0 && (c == '"' || c == '\''):
			q, open = c, i+1
		case q == '"' && c == '\\':
			i++
		case q != 0 && c == q:
			if q == '\'' && i+1 < len(text) && text[i+1] == '\'' { // '' escapes a quote
				i++
				continue
			}
			q, open = 0, 0
		case q == 0 && c == '#' && (i == 0 || text[i-1] == ' '):
			return 0
		}
	}
	return open
}

// openBracket returns the column of the last "[" or "{" that the line leaves open, or 0.
func openBracket(text string) int {
	var stack []int
	var q byte
	for i := 0; i < len(text); i++ {
		c := text[i]
		switch {
		case q != 0:
			if c == q {
				q = 0
			}
		case c == '"' || c == '\'':
			q = c
		case c == '[' || c == '{':
			stack = append(stack, i+1)
		case (c == ']' || c == '}') && len(stack) > 0:
			stack = stack[:len(stack)-1]
		}
	}
	if len(stack) == 0 {
		return 0
	}
	return stack[len(stack)-1]
}

// lastTabIndent returns the line and column of the last tab in the indentation of lines, or 0.
func lastTabIndent(lines []string) (line, column int) {
	for i := len(lines) - 1; i >= 0; i-- {
		t := lines[i]
		lead := t[:len(t)-len(strings.TrimLeft(t, " \t"))]
		if j := strings.IndexByte(lead, '\t'); j >= 0 && strings.TrimSpace(t) != "" {
			return i + 1, j + 1
		}
	}
	return 0, 0
}

// openLevels returns the indentations that the block structure of the lines allows on the next
// line, deepest first, and whether the last of them opens a block (a "key:" with no value, a
// "-" alone, a block scalar), below which the next line may be indented deeper.
func openLevels(lines []string) (levels []level, opensBlock bool) {
	limit := -1 // only levels shallower than the last one found are still open
	for i := len(lines) - 1; i >= 0 && limit != 0; i-- {
		t := strings.TrimRight(lines[i], " \r")
		content := strings.TrimLeft(t, " ")
		if content == "" || strings.HasPrefix(content, "#") {
			continue
		}
		if strings.HasPrefix(t, "---") || strings.HasPrefix(t, "...") {
			break
		}
		if levels == nil {
			opensBlock = opensABlock(content)
		}
		ls := lineLevels(len(t)-len(content), content, i+1)
		for j := len(ls) - 1; j >= 0; j-- {
			if limit < 0 || ls[j].spaces < limit {
				levels = append(levels, ls[j])
			}
		}
		if limit < 0 || ls[0].spaces < limit {
			limit = ls[0].spaces
		}
	}
	return levels, opensBlock
}

// lineLevels returns the levels one line opens, shallowest first: its indentation and, for list
// items, the column of what follows each "- ".
func lineLevels(indent int, content string, line int) []level {
	ls := []level{{indent, line, startOf(content)}}
	for col := indent; strings.HasPrefix(content, "- "); {
		rest := strings.TrimLeft(content[1:], " ")
		col += len(content) - len(rest)
		content = rest
		ls = append(ls, level{col, line, startOf(content)})
	}
	return ls
}

// startOf names what starts a line's content, for a message: "-", "key:" or the first words.
func startOf(content string) string {
	switch {
	case isListItem(content):
		return "-"
	case strings.HasSuffix(content, ":"):
		return content
	}
	if key, _, ok := strings.Cut(content, ": "); ok {
		return key + ":"
	}
	if r := []rune(content); len(r) > 20 {
		return string(r[:20]) + "..."
	}
	return content
}

// blockValueRE matches what ends a line that opens a block: "key:", "-", or a block scalar
// header ("key: |", "- >-"), with an optional comment.
var blockValueRE = regexp.MustCompile(`(?:(?:^|\s)-|:|[|>][-+0-9]*)(?:\s+#.*)?$`)

func opensABlock(content string) bool { return blockValueRE.MatchString(content) }

func hasLevel(levels []level, spaces int) bool { return levelAt(levels, spaces) > 0 }

// levelAt returns the line of the level of that indentation, or 0.
func levelAt(levels []level, spaces int) int {
	for _, l := range levels {
		if l.spaces == spaces {
			return l.line
		}
	}
	return 0
}

// nearest returns the levels closest to spaces: the nearest deeper and shallower ones, or the
// two deepest when it is deeper than all.
func nearest(levels []level, spaces int) []level {
	var deeper, shallower []level
	for _, l := range levels { // deepest first
		if l.spaces > spaces {
			deeper = append(deeper, l)
		} else {
			shallower = append(shallower, l)
		}
	}
	var out []level
	if len(deeper) > 0 {
		out = append(out, deeper[len(deeper)-1])
	}
	for _, l := range shallower {
		if len(out) == 2 {
			break
		}
		out = append(out, l)
	}
	return out
}
