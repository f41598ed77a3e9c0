// Command metacel turns YAML policies into Kubernetes operators: `run` reconciles them in a
// cluster, `render` and `validate` preview and check them offline.
package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"
)

// errReported means the command already printed its errors; main only sets the exit code.
var errReported = errors.New("errors reported")

func main() {
	root := newRootCommand()
	asKubectlPlugin(root, os.Args[0])
	if err := root.Execute(); err != nil {
		if !errors.Is(err, errReported) {
			fmt.Fprintln(os.Stderr, "error:", err)
		}
		os.Exit(1)
	}
}

func newRootCommand() *cobra.Command {
	root := &cobra.Command{
		Use:           "metacel",
		Short:         "Kubernetes operators from YAML policies and CEL, with no controller code",
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.AddCommand(newRunCommand(), newRenderCommand(), newRBACCommand(), newValidateCommand(), newVersionCommand(), newTestCommand(), newCRDCommand(), newPlanCommand(), newTreeCommand())
	return root
}

// asKubectlPlugin names the command `kubectl metacel` in its usage and help when the binary runs
// as kubectl's plugin: as kubectl-metacel, the name kubectl looks for on $PATH when it is given
// `kubectl metacel`, and the name krew installs.
func asKubectlPlugin(root *cobra.Command, arg0 string) {
	if name, ok := strings.CutPrefix(filepath.Base(arg0), "kubectl-"); ok {
		root.Annotations = map[string]string{cobra.CommandDisplayNameAnnotation: "kubectl " + name}
	}
}
