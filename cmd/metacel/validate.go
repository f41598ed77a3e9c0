package main

import (
	"fmt"
	"io"
	"os"

	"github.com/spf13/cobra"

	"metacel.dev/metacel/runtime/kinds"
	"metacel.dev/metacel/runtime/policy"
	"metacel.dev/metacel/runtime/source"
)

func newValidateCommand() *cobra.Command {
	var crds []string
	cmd := &cobra.Command{
		Use:   "validate PATH... [--crd F]...",
		Short: "Check policy files (or directories of them) with no cluster",
		Long: `Validate parses, checks and compiles every policy in the given files and directories
(*.yaml, *.yml, *.json; bare CompositePolicy documents or ConfigMaps holding them). Errors read
file:line: field.path: message. With --crd, parents are typed from their CRD's schema, so a
misspelt field is an error. Exits 1 if any policy is invalid, or if there is none.`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			cat, err := kinds.LoadCRDFiles(crds)
			if err != nil {
				return err
			}
			files, err := source.Files(args)
			if err != nil {
				return err
			}
			if !validateFiles(cmd.OutOrStdout(), cmd.ErrOrStderr(), files, cat) {
				return errReported
			}
			return nil
		},
	}
	cmd.Flags().StringArrayVar(&crds, "crd", nil, "CRD file that types parents and resolves kinds (repeatable)")
	return cmd
}

// validateFiles prints one line per valid policy and every error; it reports whether all passed.
func validateFiles(out, errOut io.Writer, files []string, cat *kinds.Catalog) (ok bool) {
	ok = true
	names := map[string]string{}
	defer func() {
		if ok && len(names) == 0 { // nothing checked is no success: a CI job would pass on a typo
			fmt.Fprintln(errOut, "no policy found in the given paths")
			ok = false
		}
	}()
	for _, file := range files {
		data, err := readFile(file)
		if err != nil {
			fmt.Fprintln(errOut, err)
			ok = false
			continue
		}
		compiled, err := policy.Load(file, data, cat)
		if err != nil {
			fmt.Fprintln(errOut, err)
			ok = false
		}
		for _, c := range compiled {
			if first, dup := names[c.Name()]; dup {
				fmt.Fprintf(errOut, "%s:%d: metadata.name: policy %q is also defined in %s\n", file, c.Source.LineOf("metadata.name"), c.Name(), first)
				ok = false
				continue
			}
			names[c.Name()] = file
			fmt.Fprintf(out, "%s: policy %q is valid (parent %s %s, %s)\n", file, c.Name(), c.Parent.GVR.GroupVersion(), c.Parent.GVR.Resource, plural(len(c.Children), "child entry", "child entries"))
		}
	}
	return ok
}

func readFile(path string) ([]byte, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read policy: %w", err)
	}
	return data, nil
}

func plural(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return fmt.Sprintf("%d %s", n, many)
}
