//go:build e2e

package main

import (
	"os"
	"strings"
	"testing"
)

// TestTheBinarysPagesAreReadBySection reads this test binary's own resident pages: its code is
// partly resident (it runs), never more than the section, and the summary names the sections.
func TestTheBinarysPagesAreReadBySection(t *testing.T) {
	sections, err := residencyOf(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	byName := map[string]sectionResidency{}
	for _, s := range sections {
		if s.resident < 0 || s.resident > s.size {
			t.Errorf("%s: %.2f MB resident of %.2f", s.name, s.resident, s.size)
		}
		byName[s.name] = s
	}
	for _, name := range []string{".text", ".rodata", ".gopclntab"} {
		if byName[name].resident == 0 {
			t.Errorf("%s: nothing resident in a running binary; sections %+v", name, sections)
		}
	}
	if _, ok := byName[".bss"]; ok {
		t.Error(".bss is not in the file: it is anonymous memory")
	}
	summary := residencySummary(sections)
	for _, want := range []string{"code ", "function tables ", "read-only data ", "the rest "} {
		if !strings.Contains(summary, want) {
			t.Errorf("summary %q lacks %q", summary, want)
		}
	}
}

func TestAProcessGoneIsSaidSo(t *testing.T) {
	if got := binaryPagesOf(1 << 30); !strings.HasPrefix(got, "not read (") {
		t.Errorf("binaryPagesOf(no such process) = %q", got)
	}
}

// TestABinaryNotMappedIsAnError: a binary the process does not map (replaced on disk, its
// mapping then named "(deleted)") is an error, not every section at 0 MB.
func TestABinaryNotMappedIsAnError(t *testing.T) {
	if _, err := presentPages(os.Getpid(), "/no/such/binary"); err == nil || !strings.Contains(err.Error(), "no mapping of") {
		t.Errorf("presentPages(self, a binary it does not map) = %v, want no mapping", err)
	}
}
