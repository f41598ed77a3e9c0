// Command metacel turns YAML policies into Kubernetes operators: `run` reconciles them in a
// cluster, `render` and `validate` preview and check them offline.
package main

import (
	"errors"
	"fmt"
	"os"

	"github.com/spf13/cobra"
)

// errReported means the command already printed its errors; main only sets the exit code.
var errReported = errors.New("errors reported")

func main() {
	if err := newRootCommand().Execute(); err != nil {
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
