package expr

import (
	"fmt"
	"regexp"
	"strconv"
)

var identRE = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// FieldPath appends a map key to a field path: spec.template, or labels["app.kubernetes.io/name"]
// for a key that is not a plain identifier.
func FieldPath(path, key string) string {
	if identRE.MatchString(key) {
		if path == "" {
			return key
		}
		return path + "." + key
	}
	return path + "[" + strconv.Quote(key) + "]"
}

// IndexPath appends a list index to a field path.
func IndexPath(path string, i int) string { return fmt.Sprintf("%s[%d]", path, i) }

// pathError is an error at a field path inside a policy.
type pathError struct {
	Path string
	Err  error
}

func (e *pathError) Error() string { return e.Path + ": " + e.Err.Error() }
func (e *pathError) Unwrap() error { return e.Err }

// PathErrors collects the errors of one template.
type PathErrors []*pathError

func (l PathErrors) Error() string {
	s := ""
	for i, e := range l {
		if i > 0 {
			s += "\n"
		}
		s += e.Error()
	}
	return s
}

// IsIdentifier reports whether s can name a field in CEL without quoting.
func IsIdentifier(s string) bool { return identRE.MatchString(s) }
