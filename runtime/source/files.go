package source

import (
	"fmt"
	"os"

	"metacel.dev/metacel/runtime/kinds"
	"metacel.dev/metacel/runtime/manifest"
	"metacel.dev/metacel/runtime/policy"
)

// Files expands paths into policy files: a file as named, a directory into its *.yaml, *.yml
// and *.json files, recursively, in lexical order. Hidden entries inside a directory are skipped:
// a mounted ConfigMap's files are also reachable through its hidden ..data directory.
func Files(paths []string) ([]string, error) {
	var out []string
	for _, p := range paths {
		files, err := manifest.Files(p, manifest.Extensions...)
		if err != nil {
			return nil, fmt.Errorf("read policies: %w", err)
		}
		out = append(out, files...)
	}
	return out, nil
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
