package main

import (
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"metacel.dev/metacel/runtime/kinds"
	"metacel.dev/metacel/runtime/manifest"
	"metacel.dev/metacel/runtime/policy"
	"metacel.dev/metacel/runtime/preview"
	"metacel.dev/metacel/runtime/source"
)

func newValidateCommand() *cobra.Command {
	var crds []string
	var output string
	var cluster *clusterFlags
	cmd := &cobra.Command{
		Use:   "validate PATH... [--crd F]... [--kubeconfig F] [-o text|graph]",
		Short: "Check policy files (or directories of them) with no cluster",
		Long: `Validate parses, checks and compiles every policy in the given files and directories
(*.yaml, *.yml, *.json; bare CompositePolicy documents or ConfigMaps holding them: labelled
metacel.dev/policy=true, or with a data value holding kind: CompositePolicy, parsed or not); the
other files (test files, CRDs, samples) are skipped with a note, so that a policy may share its
folder with them. The sample parents among them (objects of a valid policy's parent resource) are
checked as the API server would admit them, against the parent's CRD or parentSchema. Errors read
file:line: field.path: message. Child templates are checked against the schema of their kind:
built-in kinds against the schemas Kubernetes ships, custom kinds against their CRD (--crd). With
--crd, parents are typed from their CRD's schema, so a misspelt field is an error; a policy whose
custom parent no --crd file defines is then an error too. --crd takes files or directories.
With --kubeconfig (or --context, or any other cluster flag), what the --crd files do not define
is looked up in that cluster: its resources, and its CRDs' schemas (nothing is written). Warnings
(file:line: field.path: warning: message) name what the API server would accept but that does not
do what the policy says (a Secret key in both data and stringData, an HPA aimed at no child, a
workload that sets replicas under an HPA) or grants beyond a parent's namespace; they fail
nothing. With -o graph, each valid policy's children are printed in the order they are applied
(deleted in the reverse), each with what it waits for and why. Exits 1 if any policy or sample
is invalid, or if there is no policy.`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if output != "text" && output != "graph" {
				return fmt.Errorf("-o %q: want text or graph", output)
			}
			cat, err := kinds.LoadCRDFiles(crds)
			if err != nil {
				return err
			}
			v := validation{cat: cat, mapper: cat, withCRDs: len(crds) > 0, graph: output == "graph"}
			if cluster.given() {
				if v.cluster, err = clusterMapper(cluster); err != nil {
					return err
				}
				v.mapper = kinds.Chain{cat, v.cluster}
			}
			files, err := source.Files(args)
			if err != nil {
				return err
			}
			out, errOut := cmd.OutOrStdout(), cmd.ErrOrStderr()
			policies, others := splitPolicyFiles(files)
			valid, ok := v.files(out, errOut, policies)
			others, samplesOK := v.samples(cmd.Context(), out, errOut, others, valid)
			noteSkipped(errOut, others, v.withCRDs)
			if !ok || !samplesOK {
				return errReported
			}
			return nil
		},
	}
	cmd.Flags().StringArrayVar(&crds, "crd", nil, "CRD file or directory that types parents and children and resolves kinds (repeatable)")
	cmd.Flags().StringVarP(&output, "output", "o", "text", "text, or graph: each policy's children in the order they are applied, with what each waits for")
	cluster = addClusterFlags(cmd, "kubeconfig of a cluster whose resources and CRDs type what the --crd files do not", withoutNamespace)
	mustRegister(cmd, "output", outputCompletion("text", "graph"))
	return cmd
}

// validation is what policies are checked against: the CRD files given, and a cluster.
type validation struct {
	cat *kinds.Catalog
	// mapper resolves resources: cat, then the cluster
	mapper kinds.Mapper
	// withCRDs says that CRD files were given: every custom parent must then be defined by one
	// (or by the cluster)
	withCRDs bool
	// graph prints each valid policy's order of children (-o graph)
	graph bool
	// cluster is the cluster's mapper, nil without a cluster flag
	cluster kinds.Mapper
}

// clusterMapper returns the Mapper of the cluster the flags name: discovery, and its CRDs for
// schemas. It fails when the cluster cannot be reached, rather than let every resource look unknown.
func clusterMapper(cluster *clusterFlags) (kinds.Mapper, error) {
	cfg, err := cluster.restConfig("metacel-validate/" + version)
	if err != nil {
		return nil, err
	}
	kube, dyn, err := cluster.reach(cfg)
	if err != nil {
		return nil, err
	}
	return kinds.NewDiscovery(kube.Discovery(), dyn), nil
}

// files prints one line per valid policy and every error; it returns the valid policies, and
// reports whether all passed.
func (v validation) files(out, errOut io.Writer, files []string) (valid []*policy.Compiled, ok bool) {
	cat := v.cat
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
		compiled, err := policy.Load(file, data, v.mapper)
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
			if err := preview.CheckParentDefined(c, cat); err != nil {
				fmt.Fprintln(errOut, err)
				ok = false
				continue
			}
			valid = append(valid, c)
			fmt.Fprintf(out, "%s: policy %q is valid (parent %s %s, %s; %s%s)\n", file, c.Name(), c.Parent.GVR.GroupVersion(), c.Parent.GVR.Resource,
				v.parentTyping(c), plural(len(c.Children), "child entry", "child entries"), uncheckedChildren(c))
			for _, f := range policy.Lint(c) {
				fmt.Fprintln(errOut, f)
			}
			if v.graph {
				printOrder(out, c)
			}
		}
	}
	return valid, ok
}

// clusterDefines reports whether the cluster (of the cluster flags) serves a custom resource.
func (v validation) clusterDefines(gvr schema.GroupVersionResource) bool {
	if v.cluster == nil || gvr.Group == "" {
		return false
	}
	_, ok := v.cluster.ForResource(gvr)
	return ok
}

// parentTyping says whether the policy's expressions were typed against the parent's schema.
func (v validation) parentTyping(c *policy.Compiled) string {
	gr := c.Parent.GVR.GroupResource()
	switch {
	case c.Parent.Schema != nil && v.cat.DefinedByCRD(gr):
		return "typed against CRD " + gr.String()
	case c.Parent.Schema != nil && !c.Parent.Guessed && v.clusterDefines(c.Parent.GVR):
		return "typed against the cluster's CRD " + gr.String()
	case c.Parent.Schema != nil:
		return "typed against the schema the policy declares"
	case v.cat.DefinedByCRD(gr) || v.clusterDefines(c.Parent.GVR):
		return "untyped: its CRD has no schema"
	case !c.Parent.Guessed:
		return "untyped: a built-in resource"
	}
	return "untyped: pass --crd to check parent fields"
}

// uncheckedChildren names the child resources whose schema is not known, so that their
// templates were not checked.
func uncheckedChildren(c *policy.Compiled) string {
	var unknown []string
	for gvr, res := range c.ChildResources {
		if res.ObjectSchema == nil {
			unknown = append(unknown, gvr.GroupResource().String())
		}
	}
	if len(unknown) == 0 {
		return ""
	}
	slices.Sort(unknown)
	return fmt.Sprintf("; children of %s unchecked: pass their CRD with --crd", strings.Join(unknown, ", "))
}

func readFile(path string) ([]byte, error) {
	data, err := manifest.ReadInput(path)
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

// printOrder writes the order a policy's children are applied in, each with what it waits for:
// one line per child entry, numbered, indented under the policy's line.
func printOrder(w io.Writer, c *policy.Compiled) {
	fmt.Fprintln(w, "  children, in the order they are applied (deleted in the reverse):")
	for n, i := range c.Order {
		ch := c.Children[i]
		line := fmt.Sprintf("  %d. %s", n+1, ch.ID)
		var waits []string
		for _, d := range ch.After {
			until := "exists"
			if d.Ready {
				until = "is ready"
			}
			waits = append(waits, fmt.Sprintf("after %s %s (%s)", d.ID, until, d.Why))
		}
		if len(waits) > 0 {
			line += ": " + strings.Join(waits, ", ")
		}
		fmt.Fprintln(w, line)
	}
}
