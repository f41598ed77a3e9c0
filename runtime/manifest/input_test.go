package manifest

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// A command reads a file several times (what it holds, then its objects, then their lines):
// standard input and a pipe (a shell's <(...), /dev/stdin) gave their text to the first read
// only, and `metacel validate -` read "-" as a file name.
func TestAnInputThatCanBeReadOnceIsReadAgainAlike(t *testing.T) {
	const text = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\n"
	fifo := filepath.Join(t.TempDir(), "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Skipf("no named pipes here: %v", err)
	}
	go func() {
		if f, err := os.OpenFile(fifo, os.O_WRONLY, 0); err == nil {
			_, _ = f.WriteString(text)
			_ = f.Close()
		}
	}()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	stdin := os.Stdin
	os.Stdin = r
	t.Cleanup(func() { os.Stdin = stdin })
	go func() {
		_, _ = w.WriteString(text)
		_ = w.Close()
	}()
	for _, path := range []string{Stdin, fifo} {
		for i := range 2 {
			heads, err := ReadHeads(path)
			if err != nil || len(heads) != 1 || heads[0].Name != "a" {
				t.Errorf("read %d of %s: %v, %v", i+1, path, heads, err)
			}
		}
	}
	if files, err := Files(Stdin, Extensions...); err != nil || len(files) != 1 || files[0] != Stdin {
		t.Errorf("Files(-) = %v, %v; want [-]", files, err)
	}
}
