package main

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"metacel.dev/metacel/runtime/contract"
	"metacel.dev/metacel/runtime/kinds"
	"metacel.dev/metacel/runtime/manifest"
	"metacel.dev/metacel/runtime/policy"
	"metacel.dev/metacel/runtime/preview"
	"metacel.dev/metacel/runtime/render"
)

type renderOptions struct {
	policyFile, policyName, parentFile string
	related, observed, crds            []string
	policyNamespace                    string
}

func newRenderCommand() *cobra.Command {
	o := &renderOptions{}
	cmd := &cobra.Command{
		Use:   "render --policy F --parent F [--related F]... [--observed F]... [--crd F|DIR]... [--policy-name N] [--policy-namespace NS]",
		Short: "Print the children and status a policy computes for a parent, with no cluster",
		Long: `Render prints the desired children of the parent as a YAML stream in a stable order,
then the parent with its computed status as the last document: exactly what the runtime would
apply. Related objects (--related) and observed children (--observed, e.g. a Pod with its status)
are inputs, as the cluster would provide them; an observed object counts only when it is a desired
child (same kind, namespace and name) of this parent, as in the runtime.

With --crd, the parent is typed from its schema and checked as the API server would check it: an
unknown field or one its schema refuses is an error naming the field and the rule, and the
schema's defaults are applied. A parent without metadata.uid gets a stable one (said on stderr).
The computed status is checked against the CRD's status schema.

stderr lists what the sync would do to observed objects besides applying the children: delete
(or release, deletionPolicy Orphan) those no longer desired, recreate those of a Recreate resource
that changed, and conflict with objects of a child's name that are not this parent's.

It exits 1 with the error the parent's Synced condition would show when the policy or parent is
invalid.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return o.run(cmd.Context(), cmd.OutOrStdout(), cmd.ErrOrStderr())
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.policyFile, "policy", "", "policy file (a CompositePolicy, or a ConfigMap holding policies)")
	f.StringVar(&o.policyName, "policy-name", "", "which policy of the file, when it holds several")
	f.StringVar(&o.parentFile, "parent", "", "file holding the parent object")
	f.StringArrayVar(&o.related, "related", nil, "file of related objects (repeatable)")
	f.StringArrayVar(&o.observed, "observed", nil, "file of observed children, e.g. with their status (repeatable)")
	f.StringArrayVar(&o.crds, "crd", nil, "CRD file, or a directory of them, that types the parent and resolves kinds (repeatable)")
	f.StringVar(&o.policyNamespace, "policy-namespace", contract.DefaultPolicyNamespace, `the runtime's policy namespace, where no child may be placed ("" for none)`)
	_ = cmd.MarkFlagRequired("policy")
	_ = cmd.MarkFlagRequired("parent")
	return cmd
}

func (o *renderOptions) run(ctx context.Context, stdout, stderr io.Writer) error {
	cat, err := kinds.LoadCRDFiles(o.crds)
	if err != nil {
		return err
	}
	c, err := preview.LoadPolicy(o.policyFile, o.policyName, cat)
	if err != nil {
		return err
	}
	if err := preview.CheckParentDefined(c, cat); err != nil {
		return err
	}
	parents, err := manifest.ReadFile(o.parentFile)
	if err != nil {
		return err
	}
	in := preview.Input{Policy: c, Mapper: cat, ReservedNamespace: o.policyNamespace}
	if in.Parent, err = preview.ParentOf(ctx, parents, c, cat, o.parentFile); err != nil {
		return err
	}
	if in.Related, err = readAll(o.related); err != nil {
		return err
	}
	if in.Observed, err = readAll(o.observed); err != nil {
		return err
	}
	res, err := preview.Run(ctx, in)
	if err != nil {
		return previewError(c, o.parentFile, err)
	}
	printNotes(stderr, res)
	return printOutput(stdout, res)
}

// previewError prefixes a parent the API server would refuse with its file, and a render failure
// with the reason the parent's Synced condition would show, after the file and line of the
// policy's field that failed, when it names one.
func previewError(c *policy.Compiled, parentFile string, err error) error {
	var invalid *preview.InvalidError
	if errors.As(err, &invalid) {
		return fmt.Errorf("%s: %w", parentFile, err)
	}
	var re *render.Error
	if errors.As(err, &re) && re.Path != "" && c.Source != nil {
		return fmt.Errorf("%s:%d: %s", c.Source.File, c.Source.LineOf(re.Path), preview.ErrorText(err))
	}
	return errors.New(preview.ErrorText(err))
}

// printNotes writes to stderr what render assumed or left out, and the changes the sync would
// make to observed objects, so that stdout stays YAML to apply.
func printNotes(w io.Writer, res *preview.Result) {
	for _, n := range res.Notes {
		fmt.Fprintf(w, "note: %s\n", n)
	}
	if len(res.Changes) == 0 {
		return
	}
	fmt.Fprintln(w, "changes to observed objects:")
	for _, ch := range res.Changes {
		fmt.Fprintf(w, "  %s\n", ch)
	}
}

// printOutput writes the children, then the parent with its computed status.
func printOutput(w io.Writer, res *preview.Result) error {
	docs := make([]map[string]any, 0, len(res.Output.Children)+1)
	for _, ch := range res.Output.Children {
		docs = append(docs, ch.Object.Object)
	}
	docs = append(docs, res.Parent.Object)
	return writeYAML(w, docs)
}
