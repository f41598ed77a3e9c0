package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"

	"metacel.dev/metacel/runtime/apply"
	"metacel.dev/metacel/runtime/clusterread"
	"metacel.dev/metacel/runtime/kinds"
	"metacel.dev/metacel/runtime/tree"
)

type treeOptions struct {
	cluster                             *clusterFlags
	policyNamespace, policyName, output string
	depth                               int
}

func newTreeCommand() *cobra.Command { return (&treeOptions{}).command() }

// command is the tree command of the options o, which its flags set.
func (o *treeOptions) command() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "tree KIND/NAME [-n NS] | tree --policy NAME",
		Short: "Show a parent's children and related objects, each with its state, or a policy's parents",
		Long: `Tree shows one parent as the cluster holds it: the policy and version that sync it, its
Synced and Ready conditions, then each child it should have (there or missing, ready or the
readyWhen that is not true yet, what the next sync would do to it, the last error a write of it
met) and each related object it reads. KIND is the parent's kind or resource (MyApp, myapps,
myapps.demo.rtfm.co.ua). It exits 1 when the parent is not Ready.

A child that is itself the parent of a running policy (a Team's App, which a policy of Apps
syncs) shows its own tree beneath it, with that policy, its conditions and its children:
--depth levels down (default 1; 0 shows the parent's children only).

With --policy alone, it lists the policy's parents with their Synced and Ready conditions, those
not Synced first, then those not Ready; it exits 1 when one is not Ready.

Tree only reads, with your own credentials: the parent, its children (by their labels), its related
objects, its events, and the policy ConfigMaps of --policy-namespace.`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			switch {
			case o.output != "text" && o.output != "json" && o.output != "wide":
				return fmt.Errorf("--output %q: want text, wide or json", o.output)
			case len(args) == 0 && o.policyName == "":
				return fmt.Errorf("give a parent as KIND/NAME, or a policy with --policy")
			case o.depth < 0 || o.depth > tree.MaxDepth:
				return fmt.Errorf("--depth %d: want 0 to %d", o.depth, tree.MaxDepth)
			}
			if len(args) == 0 {
				return o.runPolicy(cmd.Context(), cmd.OutOrStdout())
			}
			return o.runParent(cmd.Context(), cmd.OutOrStdout(), args[0])
		},
	}
	f := cmd.Flags()
	o.cluster = addClusterFlags(cmd, "kubeconfig of the cluster (default: $KUBECONFIG or ~/.kube/config)", withNamespace)
	f.Lookup("namespace").Usage = "the parent's namespace (default: the kubeconfig context's, else default)"
	f.StringVar(&o.policyNamespace, "policy-namespace", "metacel-system", "the namespace whose labelled ConfigMaps hold the running policies")
	f.StringVar(&o.policyName, "policy", "", "the policy: alone, list its parents; with KIND/NAME, the policy that syncs it")
	f.StringVarP(&o.output, "output", "o", "text", "text, wide (with UIDs and API versions), or json")
	f.IntVar(&o.depth, "depth", 1, fmt.Sprintf("levels of children's own trees shown beneath a child that is a parent itself (0 to %d)", tree.MaxDepth))
	cmd.ValidArgsFunction = o.completeTreeArg
	mustRegister(cmd, "policy", o.completePolicy)
	mustRegister(cmd, "policy-namespace", o.cluster.completeNamespace)
	mustRegister(cmd, "output", outputCompletion("text", "wide", "json"))
	return cmd
}

// runParent shows one parent's tree; errReported when it is not Ready.
func (o *treeOptions) runParent(ctx context.Context, w io.Writer, arg string) error {
	kind, name, ok := strings.Cut(arg, "/")
	if !ok || kind == "" || name == "" {
		return fmt.Errorf("parent %q: want KIND/NAME, e.g. myapp/web", arg)
	}
	cl, err := o.clients()
	if err != nil {
		return err
	}
	running, err := o.findPolicy(ctx, cl, kind)
	if err != nil {
		return err
	}
	c := running.Policy
	ns := o.parentNamespace()
	if !c.Parent.Namespaced {
		ns = ""
	}
	getCtx, cancel := context.WithTimeout(ctx, apply.RequestTimeout)
	defer cancel()
	parent, err := cl.dyn.Resource(c.Parent.GVR).Namespace(ns).Get(getCtx, name, metav1.GetOptions{})
	if err != nil {
		return fmt.Errorf("read %s %q: %w", c.Parent.GVR.Resource, name, err)
	}
	t, err := tree.Build(ctx, tree.Input{Policy: c, Source: running.Source, Parent: parent, Client: cl.dyn, Kube: cl.kube,
		Mapper: cl.mapper, ReservedNamespace: o.policyNamespace, Depth: o.depth})
	if err != nil {
		return err
	}
	if err := o.printTree(w, t); err != nil {
		return err
	}
	if !t.Ready {
		return errReported
	}
	return nil
}

// runPolicy lists a policy's parents; errReported when one is not Ready.
func (o *treeOptions) runPolicy(ctx context.Context, w io.Writer) error {
	cl, err := o.clients()
	if err != nil {
		return err
	}
	running, err := tree.FindPolicy(ctx, cl.kube, o.policyNamespace, o.policyName, cl.mapper)
	if err != nil {
		return err
	}
	ps, err := tree.ListParents(ctx, cl.dyn, running.Policy)
	if err != nil {
		return err
	}
	if o.output == "json" {
		err = writeJSON(w, ps)
	} else {
		printParents(w, ps, o.output == "wide")
	}
	if err == nil && ps.Ready < ps.Total {
		err = errReported
	}
	return err
}

type treeClients struct {
	kube   kubernetes.Interface
	dyn    dynamic.Interface
	mapper kinds.Mapper
}

func (o *treeOptions) clients() (*treeClients, error) {
	cfg, err := o.cluster.restConfig("metacel-tree/" + version)
	if err != nil {
		return nil, err
	}
	cfg.QPS, cfg.Burst = 50, 100
	kube, dyn, err := o.cluster.reach(cfg)
	if err != nil {
		return nil, err
	}
	return &treeClients{kube: kube, dyn: dyn, mapper: kinds.NewDiscovery(kube.Discovery(), dyn)}, nil
}

// findPolicy is the policy --policy names, else the one whose parent resource is kind.
func (o *treeOptions) findPolicy(ctx context.Context, cl *treeClients, kind string) (*clusterread.Running, error) {
	if o.policyName != "" {
		return tree.FindPolicy(ctx, cl.kube, o.policyNamespace, o.policyName, cl.mapper)
	}
	return tree.FindPolicyOf(ctx, cl.kube, o.policyNamespace, kind, cl.mapper)
}

// parentNamespace is -n, else the kubeconfig context's namespace, else default.
func (o *treeOptions) parentNamespace() string { return o.cluster.namespace() }

func (o *treeOptions) printTree(w io.Writer, t *tree.Tree) error {
	if o.output == "json" {
		return writeJSON(w, t)
	}
	printTree(w, t, o.output == "wide")
	return nil
}

func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	return enc.Encode(v)
}

// printTree writes a parent's tree for people: the parent and its policy, its conditions, its
// children (each child that is a parent with its own tree beneath it), its related objects.
// Messages are never cut short.
func printTree(w io.Writer, t *tree.Tree, wide bool) {
	fmt.Fprintf(w, "%s (%s)\n", t.Parent, policyOf(t, wide))
	printItems(w, "", treeItems(t, wide))
}

// item is one line of a tree, its details beneath it and, for a child that is a parent, the
// items of its own tree.
type item struct {
	line    string
	details []string
	nested  []item
}

// treeItems are the items beneath a parent's line: its conditions, the error of its render, its
// children and its related objects.
func treeItems(t *tree.Tree, wide bool) []item {
	var items []item
	for _, c := range t.Conditions {
		items = append(items, item{line: fmt.Sprintf("%-7s %-5s %s", c.Type, c.Status, reasonMessage(c.Reason, c.Message))})
	}
	if t.Error != "" {
		items = append(items, item{line: "error: " + t.Error})
	}
	for _, c := range t.Children {
		items = append(items, childItem(c, wide))
	}
	for _, wt := range t.Waiting {
		items = append(items, item{line: "child " + wt.ID + ": waits, " + wt.Why})
	}
	for _, r := range t.Related {
		items = append(items, item{line: relatedLine(r, wide)})
	}
	return items
}

// printItems writes items as branches of a tree, each line after prefix.
func printItems(w io.Writer, prefix string, items []item) {
	for i, it := range items {
		branch, more := "├── ", "│   "
		if i == len(items)-1 {
			branch, more = "└── ", "    "
		}
		fmt.Fprintln(w, prefix+branch+it.line)
		for _, d := range it.details {
			fmt.Fprintln(w, prefix+more+"  "+d)
		}
		printItems(w, prefix+more, it.nested)
	}
}

// policyOf names the policy and version that sync a tree's parent.
func policyOf(t *tree.Tree, wide bool) string {
	s := "policy " + t.Policy + ", version " + t.Version
	if wide {
		s += ", " + t.Source + ", uid " + t.Parent.UID
	}
	return s
}

func reasonMessage(reason, message string) string {
	switch {
	case reason == "":
		return message
	case message == "":
		return reason
	}
	return reason + ": " + message
}

// childItem is a child's line, its details and its own tree.
func childItem(c tree.Child, wide bool) item {
	state := "ready"
	switch {
	case !c.Exists:
		state = "missing"
	case !c.Ready:
		state = "not ready: " + c.NotReady
	}
	about := "child " + c.ID
	if wide {
		about += ", uid " + c.UID
	}
	switch {
	case c.ShownAbove:
		about += ", a parent shown above"
	case c.Tree != nil && c.Tree.Policy != "":
		about += ", policy " + c.Tree.Policy
		if c.Tree.Version != "" {
			about += ", version " + c.Tree.Version
		}
		if wide && c.Tree.Source != "" {
			about += ", " + c.Tree.Source
		}
	}
	it := item{line: fmt.Sprintf("%s (%s): %s", c.Object, about, state)}
	if wide {
		it.line = c.APIVersion + " " + it.line
	}
	if c.Next != "" {
		it.details = append(it.details, "next sync: "+c.Next)
	}
	if c.LastError != "" {
		it.details = append(it.details, "last error: "+c.LastError)
	}
	if c.Tree != nil {
		it.nested = treeItems(c.Tree, wide)
	}
	return it
}

func relatedLine(r tree.Related, wide bool) string {
	what := r.Kind + " " + r.Namespace + "/" + r.Name
	if r.Selector != "" {
		what = r.Kind + " in " + r.Namespace + " selected by " + r.Selector
	}
	if wide {
		what = r.APIVersion + " " + what
	}
	switch {
	case r.Error != "":
		return fmt.Sprintf("related %s: %s: cannot read: %s", r.ID, what, r.Error)
	case r.Found == 0:
		return fmt.Sprintf("related %s: %s: not found", r.ID, what)
	case r.Selector != "":
		return fmt.Sprintf("related %s: %s: %d found", r.ID, what, r.Found)
	}
	return fmt.Sprintf("related %s: %s: found", r.ID, what)
}

// printParents writes a policy's parents as a table, the failing ones first.
func printParents(w io.Writer, ps *tree.Parents, wide bool) {
	fmt.Fprintf(w, "policy %s: %d parents, %d synced, %d ready\n", ps.Policy, ps.Total, ps.Synced, ps.Ready)
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "PARENT\tSYNCED\tREADY\tMESSAGE")
	for _, p := range ps.Parents {
		name := p.String()
		if wide {
			name += " (uid " + p.UID + ")"
		}
		msg := reasonMessage(p.Ready.Reason, p.Ready.Message)
		if p.Failing() {
			msg = reasonMessage(p.Synced.Reason, p.Synced.Message)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", name, orUnknown(p.Synced.Status), orUnknown(p.Ready.Status), msg)
	}
	_ = tw.Flush()
}

func orUnknown(s string) string {
	if s == "" {
		return "Unknown"
	}
	return s
}
