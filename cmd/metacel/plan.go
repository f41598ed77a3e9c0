package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"

	"github.com/spf13/cobra"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"metacel.dev/metacel/runtime/kinds"
	"metacel.dev/metacel/runtime/ledger"
	"metacel.dev/metacel/runtime/plan"
	"metacel.dev/metacel/runtime/preview"
)

type planOptions struct {
	kubeconfig, namespace, policyName, output string
}

func newPlanCommand() *cobra.Command {
	o := &planOptions{}
	cmd := &cobra.Command{
		Use:   "plan POLICY [--kubeconfig F] [--namespace NS] [--policy-name N] [-o text|json]",
		Short: "Preview what a new version of a policy would change in a cluster, writing nothing",
		Long: `Plan compiles the policy of a file (a CompositePolicy, or a ConfigMap holding policies)
against the cluster, finds the version running now (the ConfigMap labelled metacel.dev/policy=true
of the policy namespace holding a policy of that name; none: a new policy), and syncs every live
parent offline with both versions, with its related objects and children as they are. It prints,
per parent that would change, the children the runtime would create, update, recreate (a
disruptive change) or delete and release, the fields of the desired objects the change alters,
and the fields of the status; then the totals.

The API server checks every write with a dry run (dryRun=All, field manager metacel), so that
admission, schema and quota errors show before the change. A parent whose render or dry run
fails is failing, and plan then exits 1. Nothing is written: plan only reads and sends dry runs.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if o.output != "text" && o.output != "json" {
				return fmt.Errorf("--output %q: want text or json", o.output)
			}
			return o.run(cmd.Context(), cmd.OutOrStdout(), cmd.ErrOrStderr(), args[0])
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.kubeconfig, "kubeconfig", "", "kubeconfig of the cluster (default: $KUBECONFIG or ~/.kube/config)")
	f.StringVar(&o.namespace, "namespace", "metacel-system", "the policy namespace, whose labelled ConfigMaps hold the running policies")
	f.StringVar(&o.policyName, "policy-name", "", "which policy of the file, when it holds several")
	f.StringVarP(&o.output, "output", "o", "text", "text, or json: one document for CI")
	return cmd
}

// run plans the file's policy and prints the plan; it returns errReported when a parent would
// fail.
func (o *planOptions) run(ctx context.Context, stdout, stderr io.Writer, file string) error {
	kube, dyn, err := o.clients()
	if err != nil {
		return err
	}
	mapper := kinds.NewDiscovery(kube.Discovery(), dyn)
	candidate, err := preview.LoadPolicy(file, o.policyName, mapper)
	if err != nil {
		return err
	}
	running, err := plan.FindRunning(ctx, kube, o.namespace, candidate.Name(), mapper)
	if err != nil {
		return err
	}
	in := plan.Input{Candidate: candidate, Client: dyn, Mapper: mapper}
	if running != nil {
		in.Running = running.Policy
	}
	if in.Recorded, err = ledger.New(kube, o.namespace).ChildResources(ctx, candidate.Name()); err != nil {
		fmt.Fprintf(stderr, "warning: %v: the children of resources the policy listed before may be missing from the plan\n", err)
	}
	p, err := plan.Run(ctx, in)
	if err != nil {
		return err
	}
	if running != nil {
		p.Running = running.Source
	}
	if err := o.print(stdout, file, p); err != nil {
		return err
	}
	if p.Totals.Failing > 0 {
		return errReported
	}
	return nil
}

// clients connects to the cluster of the kubeconfig, as kubectl finds it; it fails when the
// cluster cannot be reached.
func (o *planOptions) clients() (kubernetes.Interface, dynamic.Interface, error) {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	rules.ExplicitPath = o.kubeconfig
	cfg, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{}).ClientConfig()
	if err != nil {
		return nil, nil, fmt.Errorf("kubeconfig %q: %w", o.kubeconfig, err)
	}
	cfg.UserAgent = "metacel-plan/" + version
	cfg.QPS, cfg.Burst = 50, 100
	kube, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, nil, fmt.Errorf("kubeconfig %q: %w", o.kubeconfig, err)
	}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return nil, nil, fmt.Errorf("kubeconfig %q: %w", o.kubeconfig, err)
	}
	if _, err := kube.Discovery().ServerVersion(); err != nil {
		return nil, nil, fmt.Errorf("cannot reach the cluster of kubeconfig %q: %w", o.kubeconfig, err)
	}
	return kube, dyn, nil
}

func (o *planOptions) print(w io.Writer, file string, p *plan.Plan) error {
	if o.output == "json" {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(p)
	}
	printPlan(w, file, p)
	return nil
}

// printPlan writes a plan for people: what is compared, each parent that would change, the
// totals.
func printPlan(w io.Writer, file string, p *plan.Plan) {
	against := "no running version: a new policy"
	if p.Running != "" {
		against = "the running version in " + p.Running
	}
	fmt.Fprintf(w, "policy %q of %s, against %s\n", p.Policy, file, against)
	for _, parent := range p.Parents {
		printParent(w, parent)
	}
	t := p.Totals
	fmt.Fprintf(w, "\n%s, %d changed: %d created, %d updated, %d recreated, %d deleted, %d released, %d failing\n",
		plural(t.Parents, "parent", "parents"), t.Changed, t.Created, t.Updated, t.Recreated, t.Deleted, t.Released, t.Failing)
}

func printParent(w io.Writer, p plan.Parent) {
	fmt.Fprintf(w, "\n%s:\n", p)
	for _, c := range p.Children {
		disruptive := ""
		if c.Disruptive {
			disruptive = " (disruptive)"
		}
		fmt.Fprintf(w, "  %s%s: %s\n", c, disruptive, c.Why)
		for _, f := range c.Fields {
			fmt.Fprintf(w, "      %s\n", f)
		}
		if c.DryRunError != "" {
			fmt.Fprintf(w, "      dry run refused: %s\n", c.DryRunError)
		}
	}
	for _, f := range p.Status {
		fmt.Fprintf(w, "  status.%s\n", f)
	}
	if p.Failing() {
		fmt.Fprintf(w, "  FAILING: %s\n", p.Error)
	}
}
