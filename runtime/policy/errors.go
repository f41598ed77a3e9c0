package policy

import (
	"fmt"
	"strings"
)

// FieldError is a problem in a policy file, located by file, line and field path.
type FieldError struct {
	File string
	Line int
	// Column, from 1, is set for YAML syntax errors only; 0 prints no column.
	Column int
	// Path is the field path inside the policy document, e.g. spec.children[0].template.
	Path string
	Msg  string
}

func (e *FieldError) Error() string {
	var b strings.Builder
	b.WriteString(e.File)
	if e.Line > 0 {
		fmt.Fprintf(&b, ":%d", e.Line)
		if e.Column > 0 {
			fmt.Fprintf(&b, ":%d", e.Column)
		}
	}
	if e.Path != "" {
		b.WriteString(": ")
		b.WriteString(e.Path)
	}
	b.WriteString(": ")
	b.WriteString(e.Msg)
	return b.String()
}

// ErrorList holds every problem found in one load, in file order.
type ErrorList []*FieldError

func (l ErrorList) Error() string {
	msgs := make([]string, len(l))
	for i, e := range l {
		msgs[i] = e.Error()
	}
	return strings.Join(msgs, "\n")
}

// Err returns the list as an error, or nil when it is empty.
func (l ErrorList) Err() error {
	if len(l) == 0 {
		return nil
	}
	return l
}

// Source locates a parsed document: the file it came from and the line of each field path.
type Source struct {
	File string
	// Line of the document's first line, used when a path has no line of its own.
	Line  int
	lines map[string]int
}

// LineOf returns the line of path, or of its closest ancestor that has one.
func (s *Source) LineOf(path string) int {
	for p := path; ; {
		if l, ok := s.lines[p]; ok {
			return l
		}
		cut := strings.LastIndexAny(p, ".[")
		if cut <= 0 {
			return s.Line
		}
		p = p[:cut]
	}
}

// Errorf returns a FieldError at path.
func (s *Source) Errorf(path, format string, args ...any) *FieldError {
	return &FieldError{File: s.File, Line: s.LineOf(path), Path: path, Msg: fmt.Sprintf(format, args...)}
}
