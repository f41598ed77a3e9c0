package parentcrd

import (
	"slices"
	"testing"
)

// TestEveryFormatIsOneTheAPIServerChecks holds the formats a field may have, which error messages
// and the policy format's JSON Schema list, to apiextensions-apiserver's own list.
func TestEveryFormatIsOneTheAPIServerChecks(t *testing.T) {
	for typ, list := range formats {
		for _, f := range list {
			if !formatKnown(typ, f) {
				t.Errorf("the API server does not check the format %q of %s", f, article(typ))
			}
		}
	}
	for _, f := range []string{"emial", "int16", "datetime2"} {
		if slices.ContainsFunc(fieldTypes, func(typ string) bool { return formatKnown(typ, f) }) {
			t.Errorf("the API server checks %q, which the test takes for an unknown format", f)
		}
	}
}
