//go:build e2e

package main

import (
	"bufio"
	"debug/elf"
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// The binary's file pages, by ELF section: which of a process's executable's pages are mapped
// into it (present in /proc/<pid>/pagemap), against each section's size. The kernel maps the
// 64 KB around each page a process touches, so a binary's code is resident as a whole more than
// function by function; this says which part of the binary the "file pages" of RSS are.

// sectionResidency is one section of a binary: MB resident in the process, and its size.
type sectionResidency struct {
	name           string
	resident, size float64
}

// residencyOf returns, for the sections of pid's executable that are loaded (code, read-only
// data, function tables, data), the MB resident in pid, in the sections' order.
func residencyOf(pid int) ([]sectionResidency, error) {
	exe, err := filepath.EvalSymlinks(fmt.Sprintf("/proc/%d/exe", pid))
	if err != nil {
		return nil, err
	}
	f, err := elf.Open(exe)
	if err != nil {
		return nil, err
	}
	defer func() { _ = f.Close() }()
	present, err := presentPages(pid, exe)
	if err != nil {
		return nil, err
	}
	page := uint64(os.Getpagesize())
	var out []sectionResidency
	for _, s := range f.Sections {
		if s.Flags&elf.SHF_ALLOC == 0 || s.Type != elf.SHT_PROGBITS || s.Size == 0 {
			continue // not loaded from the file (.bss is anonymous memory)
		}
		var resident uint64 // bytes of the section in present pages
		for p := s.Addr / page * page; p < s.Addr+s.Size; p += page {
			if present[p] {
				resident += min(p+page, s.Addr+s.Size) - max(p, s.Addr)
			}
		}
		out = append(out, sectionResidency{name: s.Name, resident: float64(resident) / 1e6, size: float64(s.Size) / 1e6})
	}
	return out, nil
}

// presentPages returns the addresses of the pages of exe's mappings in pid that are present; an
// error when pid maps nothing of exe.
// A position-independent executable is not handled: the addresses are the ELF's (Go builds a
// static executable at fixed addresses unless told -buildmode=pie).
func presentPages(pid int, exe string) (map[uint64]bool, error) {
	maps, err := os.Open(fmt.Sprintf("/proc/%d/maps", pid))
	if err != nil {
		return nil, err
	}
	defer func() { _ = maps.Close() }()
	pagemap, err := os.Open(fmt.Sprintf("/proc/%d/pagemap", pid))
	if err != nil {
		return nil, err
	}
	defer func() { _ = pagemap.Close() }()
	page := uint64(os.Getpagesize())
	present, mapped := map[uint64]bool{}, false
	sc := bufio.NewScanner(maps)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) < 6 || fields[5] != exe {
			continue
		}
		mapped = true
		from, to, ok := strings.Cut(fields[0], "-")
		lo, err1 := strconv.ParseUint(from, 16, 64)
		hi, err2 := strconv.ParseUint(to, 16, 64)
		if !ok || err1 != nil || err2 != nil {
			return nil, fmt.Errorf("/proc/%d/maps: %q", pid, sc.Text())
		}
		// one 64-bit entry per page; bit 63: present
		entries := make([]byte, (hi-lo)/page*8)
		if _, err := pagemap.ReadAt(entries, int64(lo/page*8)); err != nil {
			return nil, fmt.Errorf("/proc/%d/pagemap: %w", pid, err)
		}
		for i := range (hi - lo) / page {
			if binary.LittleEndian.Uint64(entries[i*8:])>>63 == 1 {
				present[lo+i*page] = true
			}
		}
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if !mapped {
		return nil, fmt.Errorf("/proc/%d/maps: no mapping of %s", pid, exe) // replaced on disk: "(deleted)"
	}
	return present, nil
}

// binaryPagesOf is residencySummary of pid's binary, or why it cannot be read.
func binaryPagesOf(pid int) string {
	sections, err := residencyOf(pid)
	if err != nil {
		return fmt.Sprintf("not read (%v)", err)
	}
	return residencySummary(sections)
}

// residencySummary says the resident MB of the larger sections: "code 19.2 of 23.0 MB, ...".
func residencySummary(sections []sectionResidency) string {
	names := map[string]string{".text": "code", ".gopclntab": "function tables", ".rodata": "read-only data"}
	var parts []string
	var rest, restSize float64
	for _, s := range sections {
		if name, ok := names[s.name]; ok {
			parts = append(parts, fmt.Sprintf("%s %.1f of %.1f", name, s.resident, s.size))
			continue
		}
		rest, restSize = rest+s.resident, restSize+s.size
	}
	if len(parts) == 0 {
		return "–"
	}
	return strings.Join(append(parts, fmt.Sprintf("the rest %.1f of %.1f", rest, restSize)), ", ") + " MB"
}
