package manifest

import (
	"io"
	"os"
	"sync"
)

// Stdin is the path that names standard input, as kubectl's -f -.
const Stdin = "-"

// ReadInput reads a file a user named: "-" is standard input, and a path that is no regular file
// (/dev/stdin, a shell's <(...) pipe) is read once. Such an input can be read only once, while a
// command reads a file several times (what it holds, then its objects, then their lines), so
// what was read is kept for every later read of the same path in the process.
func ReadInput(path string) ([]byte, error) {
	if path != Stdin {
		if info, err := os.Stat(path); err != nil || info.Mode().IsRegular() {
			return os.ReadFile(path)
		}
	}
	streams.mu.Lock()
	defer streams.mu.Unlock()
	if data, ok := streams.read[path]; ok {
		return data, nil
	}
	var data []byte
	var err error
	if path == Stdin {
		data, err = io.ReadAll(os.Stdin)
	} else {
		data, err = os.ReadFile(path)
	}
	if err != nil {
		return nil, err
	}
	streams.read[path] = data
	return data, nil
}

// streams holds what ReadInput read of the inputs that can be read once.
var streams = struct {
	mu   sync.Mutex
	read map[string][]byte
}{read: map[string][]byte{}}
