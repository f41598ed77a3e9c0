package main

import (
	"context"
	"fmt"
	"io"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"metacel.dev/metacel/runtime/expr"
	"metacel.dev/metacel/runtime/kinds"
	"metacel.dev/metacel/runtime/manifest"
	"metacel.dev/metacel/runtime/policy"
	"metacel.dev/metacel/runtime/render"
)

type renderOptions struct {
	policyFile, policyName, parentFile string
	related, observed, crds            []string
}

func newRenderCommand() *cobra.Command {
	o := &renderOptions{}
	cmd := &cobra.Command{
		Use:   "render --policy F --parent F [--related F]... [--observed F]... [--crd F]...",
		Short: "Print the children and status a policy computes for a parent, with no cluster",
		Long: `Render prints the desired children of the parent as a YAML stream in a stable order,
then the parent with its computed status as the last document: exactly what the runtime would
apply. Related objects (--related) and observed children (--observed, e.g. a Pod with its status)
are inputs, as the cluster would provide them. With --crd, the parent is typed from its schema.
It exits 1 with the error the parent's Synced condition would show when the policy or parent is
invalid.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return o.run(cmd.Context(), cmd.OutOrStdout())
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.policyFile, "policy", "", "policy file (a CompositePolicy, or a ConfigMap holding policies)")
	f.StringVar(&o.policyName, "policy-name", "", "which policy of the file, when it holds several")
	f.StringVar(&o.parentFile, "parent", "", "file holding the parent object")
	f.StringArrayVar(&o.related, "related", nil, "file of related objects (repeatable)")
	f.StringArrayVar(&o.observed, "observed", nil, "file of observed children, e.g. with their status (repeatable)")
	f.StringArrayVar(&o.crds, "crd", nil, "CRD file that types the parent and resolves kinds (repeatable)")
	_ = cmd.MarkFlagRequired("policy")
	_ = cmd.MarkFlagRequired("parent")
	return cmd
}

func (o *renderOptions) run(ctx context.Context, w io.Writer) error {
	cat, err := kinds.LoadCRDFiles(o.crds)
	if err != nil {
		return err
	}
	c, err := o.loadPolicy(cat)
	if err != nil {
		return err
	}
	parent, err := o.loadParent(c, cat)
	if err != nil {
		return err
	}
	in := render.Input{Parent: parent, Mapper: cat, Budget: expr.NewBudget()}
	if in.Related, in.Namespaces, err = o.loadRelated(ctx, c, parent, cat, in.Budget); err != nil {
		return err
	}
	observed, err := readAll(o.observed)
	if err != nil {
		return err
	}
	out, err := renderWithObserved(ctx, c, in, observed)
	if err != nil {
		return fmt.Errorf("%s: %w", reason(err), err)
	}
	return printOutput(w, parent, out)
}

func reason(err error) string {
	if conds := render.ErrorConditions(err, render.ReasonEvaluationError); len(conds) > 0 {
		return conds[0].Reason
	}
	return render.ReasonEvaluationError
}

func (o *renderOptions) loadPolicy(cat *kinds.Catalog) (*policy.Compiled, error) {
	data, err := readFile(o.policyFile)
	if err != nil {
		return nil, err
	}
	all, err := policy.Load(o.policyFile, data, cat)
	if err != nil {
		return nil, err
	}
	var matched []*policy.Compiled
	for _, c := range all {
		if o.policyName == "" || c.Name() == o.policyName {
			matched = append(matched, c)
		}
	}
	switch {
	case len(matched) == 1:
		return matched[0], nil
	case len(matched) == 0 && o.policyName != "":
		return nil, fmt.Errorf("%s: no policy named %q", o.policyFile, o.policyName)
	case len(matched) == 0:
		return nil, fmt.Errorf("%s: no policy found", o.policyFile)
	}
	return nil, fmt.Errorf("%s holds %d policies: choose one with --policy-name", o.policyFile, len(matched))
}

// loadParent reads the parent: the one object of the policy's parent resource in the file, which
// may hold other objects too (a sample with its namespace, say).
func (o *renderOptions) loadParent(c *policy.Compiled, m kinds.Mapper) (*unstructured.Unstructured, error) {
	objs, err := manifest.ReadFile(o.parentFile)
	if err != nil {
		return nil, err
	}
	var parents []*unstructured.Unstructured
	var others []string
	for _, obj := range objs {
		if kinds.LookupKind(m, obj.GroupVersionKind()).GVR == c.Parent.GVR {
			parents = append(parents, obj)
		} else {
			others = append(others, obj.GetAPIVersion()+" "+obj.GetKind())
		}
	}
	if len(parents) != 1 {
		return nil, fmt.Errorf("%s: want exactly one object of policy %q's parent resource %s, found %d (other objects: %v)",
			o.parentFile, c.Name(), c.Parent.GVR.GroupResource(), len(parents), others)
	}
	parent := parents[0]
	if parent.GetNamespace() == "" && c.Parent.Namespaced {
		parent.SetNamespace("default") // as kubectl would place it
	}
	return parent, nil
}

// loadRelated gives each related entry the objects of the --related files that it reads, and
// the labels of the Namespaces among them (for the consent labels of the policy's confinement),
// after checking, as the runtime does, that the parent may read where its entries read.
func (o *renderOptions) loadRelated(ctx context.Context, c *policy.Compiled, parent *unstructured.Unstructured, m kinds.Mapper, budget *expr.Budget) (map[string][]*unstructured.Unstructured, render.NamespaceLabels, error) {
	objs, err := readAll(o.related)
	if err != nil {
		return nil, nil, err
	}
	namespaces := map[string]map[string]string{}
	for _, obj := range objs {
		if obj.GetAPIVersion() == "v1" && obj.GetKind() == "Namespace" {
			namespaces[obj.GetName()] = obj.GetLabels()
		}
	}
	labels := func(name string) (map[string]string, bool) {
		l, ok := namespaces[name]
		return l, ok
	}
	refs, err := render.Related(ctx, c, parent, budget)
	if err == nil {
		err = render.CheckRelatedReach(ctx, c, parent, refs, labels, budget)
	}
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %w", reason(err), err)
	}
	out := map[string][]*unstructured.Unstructured{}
	for _, obj := range objs {
		gvr := kinds.LookupKind(m, obj.GroupVersionKind()).GVR
		for _, ref := range refs {
			if ref.Resource == gvr && ref.Matches(obj) {
				out[ref.ID] = append(out[ref.ID], obj)
			}
		}
	}
	return out, labels, nil
}

// renderWithObserved renders with the observed children: those labelled with a child id belong
// to it; an unlabelled one belongs to the desired child it is the same object as, which takes a
// second render to know.
func renderWithObserved(ctx context.Context, c *policy.Compiled, in render.Input, observed []*unstructured.Unstructured) (*render.Output, error) {
	in.Observed = map[string][]*unstructured.Unstructured{}
	var unlabelled []*unstructured.Unstructured
	for _, obj := range observed {
		if id := obj.GetLabels()[render.LabelChildID]; id != "" {
			in.Observed[id] = append(in.Observed[id], obj)
		} else {
			unlabelled = append(unlabelled, obj)
		}
	}
	first := in
	if len(unlabelled) > 0 {
		first.Budget = in.Budget.Copy() // this render only finds which child an unlabelled object is
	}
	out, err := render.Render(ctx, c, first)
	if err != nil || len(unlabelled) == 0 {
		return out, err
	}
	for _, obj := range unlabelled {
		for _, child := range out.Children {
			if sameObject(child.Object, obj) {
				in.Observed[child.ID] = append(in.Observed[child.ID], obj)
			}
		}
	}
	return render.Render(ctx, c, in)
}

func sameObject(a, b *unstructured.Unstructured) bool {
	return a.GroupVersionKind().GroupKind() == b.GroupVersionKind().GroupKind() &&
		a.GetNamespace() == b.GetNamespace() && a.GetName() == b.GetName()
}

// printOutput writes the children, then the parent with its computed status.
func printOutput(w io.Writer, parent *unstructured.Unstructured, out *render.Output) error {
	status, err := render.NewStatus(parent, out.Status, out.Conditions(), nil)
	if err != nil {
		return err
	}
	docs := make([]map[string]any, 0, len(out.Children)+1)
	for _, ch := range out.Children {
		docs = append(docs, ch.Object.Object)
	}
	p := parent.DeepCopy()
	p.Object["status"] = status
	docs = append(docs, p.Object)
	return writeYAML(w, docs)
}
