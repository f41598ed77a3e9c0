package mdblocks

import (
	"fmt"
	"regexp"
	"strings"
)

// FragmentMark, on the line before a fence, marks a block that is a part of a file (a few keys
// of a policy, a comment line): checks that need a whole file skip it.
const FragmentMark = "<!-- fragment -->"

// Block is one fenced code block.
type Block struct {
	// Line is the line of its opening fence, from 1.
	Line int
	// Info is the fence's info string; its first word is the language (Lang).
	Info string
	// Fragment says that FragmentMark is on the line before the fence.
	Fragment bool
	// Name is the file the prose names the block by, the last "(`name`)" between the previous
	// block and this one with no backtick after it, or "".
	Name string
	// Text is the block's content, each line without the fence's indentation.
	Text string
}

// Lang is the block's language, the first word of its info string ("" when it has none).
func (b Block) Lang() string {
	lang, _, _ := strings.Cut(b.Info, " ")
	return lang
}

var (
	fence = regexp.MustCompile("^( *)(```+|~~~+)\\s*(.*)$")
	// a file named in the prose, as "(`website.yaml`)", with no backtick after it
	named = regexp.MustCompile("\\(`([^`]+)`\\)[^`]*$")
)

// Parse returns the fenced code blocks of a Markdown text, in order. A fence left open is an
// error: everything after it would silently be code.
func Parse(markdown string) ([]Block, error) {
	lines := strings.Split(markdown, "\n")
	var blocks []Block
	prose := 0 // the first line after the previous block
	for i := 0; i < len(lines); i++ {
		m := fence.FindStringSubmatch(lines[i])
		if m == nil {
			continue
		}
		indent, marker, info := m[1], m[2], strings.TrimSpace(m[3])
		end := closingFence(lines, i+1, indent, marker)
		if end < 0 {
			return nil, fmt.Errorf("line %d: the code block opened here is never closed", i+1)
		}
		b := Block{Line: i + 1, Info: info, Text: content(lines[i+1:end], indent)}
		b.Fragment = i > 0 && strings.TrimSpace(lines[i-1]) == FragmentMark
		if n := named.FindStringSubmatch(strings.Join(lines[prose:i], "\n")); n != nil {
			b.Name = n[1]
		}
		blocks = append(blocks, b)
		i, prose = end, end+1
	}
	return blocks, nil
}

// closingFence returns the line of the fence that closes a block opened with marker, or -1.
func closingFence(lines []string, from int, indent, marker string) int {
	for j := from; j < len(lines); j++ {
		l := strings.TrimRight(strings.TrimPrefix(lines[j], indent), " ")
		if strings.HasPrefix(l, marker) && strings.Trim(l, marker[:1]) == "" {
			return j
		}
	}
	return -1
}

// content joins a block's lines, each without the fence's indentation, with a final newline.
func content(lines []string, indent string) string {
	var b strings.Builder
	for _, l := range lines {
		b.WriteString(strings.TrimPrefix(l, indent))
		b.WriteByte('\n')
	}
	return b.String()
}

// Named returns the block the prose names name: "(`website.yaml`)" before it.
func Named(blocks []Block, name string) (Block, error) {
	for _, b := range blocks {
		if b.Name == name {
			return b, nil
		}
	}
	return Block{}, fmt.Errorf("no code block after (`%s`)", name)
}
