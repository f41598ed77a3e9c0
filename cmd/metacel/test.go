package main

import (
	"fmt"
	"regexp"

	"github.com/spf13/cobra"

	"metacel.dev/metacel/runtime/policytest"
)

type testOptions struct {
	run    string
	update bool
}

func newTestCommand() *cobra.Command {
	o := &testOptions{}
	cmd := &cobra.Command{
		Use:   "test PATH... [--run REGEXP] [--update]",
		Short: "Run policy tests written in YAML, with no cluster",
		Long: `Test runs the policy tests of the given files and directories (*.yaml and *.yml, recursively).
A test file is a YAML document with no kind; the files that hold Kubernetes objects (the policy,
its CRD, samples) are skipped with a note, so tests may live beside them; a skipped file that holds
policies fails when they do not parse. A test file names a policy and its CRDs; each test a parent (and related and observed objects),
then steps: each step may change the parent (a merge patch), related and observed objects, and
says what the sync must give (expect: children, status, changes, error; match: exact or subset).
The children a step renders are what the next step observes, as the runtime leaves them; an
observed object that is no desired child and carries no mark of the parent (a misspelt name) is
an error at its line. Output
is as go test's: --- PASS or --- FAIL per test, a unified diff per failing step, then ok or FAIL;
it exits 1 when a test fails. --update rewrites the expectations of failing steps (and of steps
without one) with what they gave, keeping their match mode, keys, comments and flow style (a
subset stays a subset).`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts := policytest.Options{Update: o.update, Notes: cmd.ErrOrStderr()}
			if o.run != "" {
				re, err := regexp.Compile(o.run)
				if err != nil {
					return fmt.Errorf("--run %q: %w", o.run, err)
				}
				opts.Run = re
			}
			passed, err := policytest.Run(cmd.Context(), cmd.OutOrStdout(), args, opts)
			switch {
			case err != nil:
				return err
			case !passed:
				return errReported
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&o.run, "run", "", "run only the tests whose name (file/test) matches this regular expression")
	cmd.Flags().BoolVar(&o.update, "update", false, "rewrite the expectations of failing steps with what they gave")
	return cmd
}
