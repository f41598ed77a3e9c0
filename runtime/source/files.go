package source

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"metacel.dev/metacel/runtime/kinds"
	"metacel.dev/metacel/runtime/policy"
)

// Files expands paths into policy files: a file as named, a directory into its *.yaml, *.yml
// and *.json files, recursively, in lexical order. Hidden entries inside a directory are skipped:
// a mounted ConfigMap's files are also reachable through its hidden ..data directory.
func Files(paths []string) ([]string, error) {
	var out []string
	for _, p := range paths {
		err := filepath.WalkDir(p, func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			hidden := path != p && strings.HasPrefix(d.Name(), ".")
			switch {
			case d.IsDir() && hidden:
				return filepath.SkipDir
			case d.IsDir() || hidden:
				return nil
			case path == p || isPolicyFile(path):
				out = append(out, path)
			}
			return nil
		})
		if err != nil {
			return nil, fmt.Errorf("read policies: %w", err)
		}
	}
	return out, nil
}

func isPolicyFile(path string) bool {
	switch filepath.Ext(path) {
	case ".yaml", ".yml", ".json":
		return true
	}
	return false
}

// Load reads and compiles every policy of the files; errors of all files are returned together.
func Load(files []string, m kinds.Mapper) ([]*policy.Compiled, error) {
	var out []*policy.Compiled
	var errs policy.ErrorList
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			errs = append(errs, &policy.FieldError{File: f, Msg: err.Error()})
			continue
		}
		compiled, err := policy.Load(f, data, m)
		if err != nil {
			errs = append(errs, policy.Errors(err)...)
		}
		out = append(out, compiled...)
	}
	return out, errs.Err()
}
