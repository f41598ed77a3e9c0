package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"

	"metacel.dev/metacel/runtime/clusterread"
	"metacel.dev/metacel/runtime/identity"
	"metacel.dev/metacel/runtime/kinds"
	"metacel.dev/metacel/runtime/ledger"
	"metacel.dev/metacel/runtime/plan"
	"metacel.dev/metacel/runtime/policy"
	"metacel.dev/metacel/runtime/preview"
)

type planOptions struct {
	cluster                       *clusterFlags
	namespace, policyName, output string
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
fails is failing, and plan then exits 1. Nothing is written: plan only reads and sends dry runs.

Plan reads and dry-runs as the policy's ServiceAccount (spec.serviceAccountName, in --namespace),
impersonating it as the runtime does: what the policy may not read or write fails here too, with
the API server's Forbidden. You need the verb impersonate on that ServiceAccount. With --as, plan
acts as whom --as names instead (the API server impersonates once per request), and says so. Secret data
never reaches the output: a Secret child's data fields are shown as changed, and the values of
every Secret the plan read are replaced by <redacted> wherever they appear.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if o.output != "text" && o.output != "json" {
				return fmt.Errorf("--output %q: want text or json", o.output)
			}
			return o.run(cmd.Context(), cmd.OutOrStdout(), cmd.ErrOrStderr(), args[0])
		},
	}
	f := cmd.Flags()
	o.cluster = addClusterFlags(cmd, "kubeconfig of the cluster (default: $KUBECONFIG or ~/.kube/config)", withoutNamespace)
	f.StringVar(&o.namespace, "namespace", "metacel-system", "the policy namespace, whose labelled ConfigMaps hold the running policies")
	f.StringVar(&o.policyName, "policy-name", "", "which policy of the file, when it holds several")
	f.StringVarP(&o.output, "output", "o", "text", "text, or json: one document for CI")
	mustRegister(cmd, "namespace", o.cluster.completeNamespace)
	mustRegister(cmd, "output", outputCompletion("text", "json"))
	return cmd
}

// run plans the file's policy and prints the plan; it returns errReported when a parent would
// fail.
func (o *planOptions) run(ctx context.Context, stdout, stderr io.Writer, file string) error {
	cfg, err := o.cluster.restConfig("metacel-plan/" + version)
	if err != nil {
		return err
	}
	cfg.QPS, cfg.Burst = 50, 100
	kube, dyn, err := o.cluster.reach(cfg)
	if err != nil {
		return err
	}
	mapper := kinds.NewDiscovery(kube.Discovery(), dyn)
	candidate, err := preview.LoadPolicy(file, o.policyName, mapper)
	if err != nil {
		return err
	}
	running, err := clusterread.FindRunning(ctx, kube, o.namespace, candidate.Name(), mapper)
	if err != nil {
		return err
	}
	in := plan.Input{Candidate: candidate, Client: dyn, Namespaces: dyn, Mapper: mapper, ReservedNamespace: o.namespace}
	if in.Client, err = o.actingAs(cfg, candidate, stderr); err != nil {
		return err
	}
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

// actingAs is the client that reads and dry-runs for the candidate (actingConfig).
func (o *planOptions) actingAs(cfg *rest.Config, candidate *policy.Compiled, stderr io.Writer) (dynamic.Interface, error) {
	acting := o.actingConfig(cfg, candidate, stderr)
	dyn, err := dynamic.NewForConfig(acting)
	if err != nil {
		return nil, fmt.Errorf("client acting as %q: %w", acting.Impersonate.UserName, err)
	}
	return dyn, nil
}

// actingConfig is whom the plan reads and dry-runs as: the candidate's ServiceAccount, which the
// caller must be allowed to impersonate, so that the plan reads and writes only what the policy
// may in the runtime; the caller's own credentials when it names none; and whom --as (or
// --as-group) names when given, which the API server could not impersonate on top of the
// ServiceAccount (one impersonation per request): said on stderr, never replaced in silence.
func (o *planOptions) actingConfig(cfg *rest.Config, candidate *policy.Compiled, stderr io.Writer) *rest.Config {
	name := candidate.ServiceAccountName()
	asked := cfg.Impersonate.UserName != "" || len(cfg.Impersonate.Groups) > 0 || cfg.Impersonate.UID != ""
	switch {
	case asked && name == "":
		fmt.Fprintf(stderr, "warning: policy %q names no spec.serviceAccountName: planned as %s (--as) (the runtime loads it only with --allow-policies-without-service-account)\n", candidate.Name(), impersonated(cfg.Impersonate))
		return cfg
	case name == "":
		fmt.Fprintf(stderr, "warning: policy %q names no spec.serviceAccountName: planned with your own credentials (the runtime loads it only with --allow-policies-without-service-account)\n", candidate.Name())
		return cfg
	case asked:
		fmt.Fprintf(stderr, "warning: planned as %s (--as), not as the policy's ServiceAccount %s/%s, which the runtime acts as: "+
			"what it may read and write may differ; leave --as out to plan as the ServiceAccount\n", impersonated(cfg.Impersonate), o.namespace, name)
		return cfg
	}
	return identity.Config(cfg, identity.ServiceAccount{Namespace: o.namespace, Name: name})
}

// impersonated names whom an impersonation config acts as: the user, else the groups.
func impersonated(imp rest.ImpersonationConfig) string {
	if imp.UserName != "" {
		return fmt.Sprintf("%q", imp.UserName)
	}
	if len(imp.Groups) > 0 {
		return fmt.Sprintf("groups %q", imp.Groups)
	}
	return fmt.Sprintf("UID %q", imp.UID)
}

func (o *planOptions) print(w io.Writer, file string, p *plan.Plan) error {
	if o.output == "json" {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		enc.SetEscapeHTML(false) // <redacted> as it reads
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
	bookkeeping := ""
	if t.Bookkeeping > 0 {
		bookkeeping = fmt.Sprintf(", %d bookkeeping patched", t.Bookkeeping)
	}
	fmt.Fprintf(w, "\n%s, %d changed: %d created, %d updated%s, %d recreated, %d deleted, %d released, %d failing\n",
		plural(t.Parents, "parent", "parents"), t.Changed, t.Created, t.Updated, bookkeeping, t.Recreated, t.Deleted, t.Released, t.Failing)
	if t.ReadinessChanged > 0 {
		fmt.Fprintf(w, "%s change Ready whatever the candidate: this metacel judges a child with no readyWhen by its kind "+
			"(a Job once complete, a Deployment once its replicas are available), where a runtime before it called it ready once it existed; "+
			"readyWhen: \"true\" keeps that\n", plural(t.ReadinessChanged, "parent", "parents"))
	}
	if v := p.Versions; v != nil {
		fmt.Fprintf(w, "versions: served now %s, by the candidate %s; stored at %s", orNone(v.Served), orNone(v.Declared), v.Storage)
		if v.Migrated > 0 {
			fmt.Fprintf(w, ": the runtime rewrites %s at %s, then trims the CRD's storedVersions", plural(v.Migrated, "stored parent", "stored parents"), v.Storage)
		}
		fmt.Fprintln(w)
	}
}

// orNone joins names with commas, or says none.
func orNone(names []string) string {
	if len(names) == 0 {
		return "none"
	}
	return strings.Join(names, ", ")
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
	if p.Readiness != nil {
		fmt.Fprintf(w, "  %s (children with no readyWhen judged by their kind)\n", p.Readiness)
	}
	if p.Failing() {
		fmt.Fprintf(w, "  FAILING: %s\n", p.Error)
	}
}
