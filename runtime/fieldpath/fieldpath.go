package fieldpath

import (
	"fmt"
	"regexp"
	"strconv"
)

var identRE = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// Field appends a map key to a field path: spec.template, or labels["app.kubernetes.io/name"]
// for a key that is not a plain identifier.
func Field(path, key string) string {
	if identRE.MatchString(key) {
		if path == "" {
			return key
		}
		return path + "." + key
	}
	return path + "[" + strconv.Quote(key) + "]"
}

// Index appends a list index to a field path.
func Index(path string, i int) string { return fmt.Sprintf("%s[%d]", path, i) }

// IsIdentifier reports whether s can name a field in CEL without quoting: a path writes it after a
// dot.
func IsIdentifier(s string) bool { return identRE.MatchString(s) }
