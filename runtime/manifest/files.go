package manifest

import (
	"io/fs"
	"path/filepath"
	"slices"
	"strings"
)

// Extensions are the extensions of manifest files: YAML and JSON.
var Extensions = []string{".yaml", ".yml", ".json"}

// Files expands a path as kubectl -f -R does: a file as named ("-", standard input, too), a
// directory into its files with one of exts, recursively, in lexical order. Hidden entries inside a directory are skipped: a
// mounted ConfigMap's files are also reachable through its hidden ..data directory.
func Files(path string, exts ...string) ([]string, error) {
	if path == Stdin {
		return []string{Stdin}, nil
	}
	var out []string
	err := filepath.WalkDir(path, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		hidden := p != path && strings.HasPrefix(d.Name(), ".")
		switch {
		case d.IsDir() && hidden:
			return filepath.SkipDir
		case d.IsDir() || hidden:
			return nil
		case p == path || slices.Contains(exts, filepath.Ext(p)):
			out = append(out, p)
		}
		return nil
	})
	return out, err
}
