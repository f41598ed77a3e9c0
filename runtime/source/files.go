package source

import (
	"fmt"

	"metacel.dev/metacel/runtime/manifest"
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
