package main

import (
	"fmt"
	"runtime/debug"

	"github.com/spf13/cobra"
)

// version is set at build time: -ldflags "-X main.version=v0.1.0".
var version = "dev"

func newVersionCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print the version of metacel and of the libraries that define its CEL",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			fmt.Fprintf(cmd.OutOrStdout(), "metacel %s\n", version)
			if bi, ok := debug.ReadBuildInfo(); ok {
				fmt.Fprintf(cmd.OutOrStdout(), "go %s\n", bi.GoVersion)
				for _, dep := range bi.Deps {
					switch dep.Path {
					case "github.com/google/cel-go", "k8s.io/apiserver", "k8s.io/client-go":
						fmt.Fprintf(cmd.OutOrStdout(), "%s %s\n", dep.Path, dep.Version)
					}
				}
			}
			return nil
		},
	}
}
