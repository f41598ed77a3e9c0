package main

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"metacel.dev/metacel/runtime/clusterread"
	"metacel.dev/metacel/runtime/policy"
)

// The shell completion of the commands that reach a cluster: cobra's `completion` command writes
// the script of a shell, which asks the binary (`metacel __complete ARGS...`) for the words that
// may come next. Besides commands and flags, which cobra knows, the binary offers kubectl's: the
// kubeconfig's contexts, clusters and users, the cluster's namespaces, and for `tree` the kinds of
// the running policies' parents and the names of the parents of a kind.

// completionTimeout bounds what one completion asks the cluster: a shell waits for it.
const completionTimeout = 5 * time.Second

// noFiles is the directive of a completion whose words are all there is: no file names.
const noFiles = cobra.ShellCompDirectiveNoFileComp

// registerCompletions completes the values of the cluster flags of cmd: --context, --cluster and
// --user from the kubeconfig, -n/--namespace (where the command has it) from the cluster.
func (c *clusterFlags) registerCompletions(cmd *cobra.Command) {
	fromKubeconfig := map[string]func(clientcmdapi.Config) []string{
		"context": func(k clientcmdapi.Config) []string { return slices.Collect(maps.Keys(k.Contexts)) },
		"cluster": func(k clientcmdapi.Config) []string { return slices.Collect(maps.Keys(k.Clusters)) },
		"user":    func(k clientcmdapi.Config) []string { return slices.Collect(maps.Keys(k.AuthInfos)) },
	}
	for flag, names := range fromKubeconfig {
		mustRegister(cmd, flag, func(_ *cobra.Command, _ []string, toComplete string) ([]string, cobra.ShellCompDirective) {
			return withPrefix(c.kubeconfigNames(names), toComplete), noFiles
		})
	}
	if c.config.Namespace != nil {
		mustRegister(cmd, "namespace", c.completeNamespace)
	}
}

// mustRegister registers the completion of a flag cmd has; a flag it does not have is a bug.
func mustRegister(cmd *cobra.Command, flag string, f cobra.CompletionFunc) {
	if err := cmd.RegisterFlagCompletionFunc(flag, f); err != nil {
		panic(fmt.Sprintf("complete --%s of %s: %v", flag, cmd.Name(), err))
	}
}

// connectForCompletion returns the clients of the cluster the flags name, not checking first
// that it answers: the completion's own requests will say.
func (c *clusterFlags) connectForCompletion() (kubernetes.Interface, dynamic.Interface, error) {
	cfg, err := c.restConfig("metacel-completion/" + version)
	if err != nil {
		return nil, nil, err
	}
	return clientsOf(cfg)
}

// clients are the clients a completion asks, connectForCompletion unless a test gives others.
func (c *clusterFlags) clients() (kubernetes.Interface, dynamic.Interface, error) {
	if c.connect != nil {
		return c.connect()
	}
	return c.connectForCompletion()
}

// kubeconfigNames are the names of one section of the kubeconfig, sorted; none when it does not
// load.
func (c *clusterFlags) kubeconfigNames(section func(clientcmdapi.Config) []string) []string {
	raw, err := c.loader().RawConfig()
	if err != nil {
		cobra.CompDebugln(fmt.Sprintf("kubeconfig: %v", err), false)
		return nil
	}
	return slices.Sorted(slices.Values(section(raw)))
}

// completeNamespace completes a namespace flag with the cluster's namespaces.
func (c *clusterFlags) completeNamespace(cmd *cobra.Command, _ []string, toComplete string) ([]string, cobra.ShellCompDirective) {
	ctx, cancel := completionContext(cmd)
	defer cancel()
	kube, _, err := c.clients()
	if err != nil {
		return completionFailed(err)
	}
	names, err := namespaceNames(ctx, kube)
	if err != nil {
		return completionFailed(err)
	}
	return withPrefix(names, toComplete), noFiles
}

// namespaceNames are the cluster's namespaces, sorted.
func namespaceNames(ctx context.Context, kube kubernetes.Interface) ([]string, error) {
	list, err := kube.CoreV1().Namespaces().List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, fmt.Errorf("list namespaces: %w", err)
	}
	names := make([]string, 0, len(list.Items))
	for _, ns := range list.Items {
		names = append(names, ns.Name)
	}
	slices.Sort(names)
	return names, nil
}

// completeTreeArg completes tree's KIND/NAME: before the slash, the kinds of the parents of the
// running policies of --policy-namespace (each followed by the slash); after it, the names of the
// parents of that kind in the parent's namespace (-n, else the context's).
func (o *treeOptions) completeTreeArg(cmd *cobra.Command, args []string, toComplete string) ([]string, cobra.ShellCompDirective) {
	if len(args) > 0 {
		return nil, noFiles
	}
	ctx, cancel := completionContext(cmd)
	defer cancel()
	kube, dyn, err := o.cluster.clients()
	if err != nil {
		return completionFailed(err)
	}
	parents, err := parentResources(ctx, kube, o.policyNamespace)
	if err != nil {
		return completionFailed(err)
	}
	kind, prefix, afterSlash := strings.Cut(toComplete, "/")
	if !afterSlash {
		return withPrefix(kindWords(parents), toComplete), cobra.ShellCompDirectiveNoSpace | noFiles
	}
	names, err := parentNames(ctx, dyn, parents, kind, o.cluster.namespace())
	if err != nil {
		return completionFailed(err)
	}
	words := withPrefix(names, prefix)
	for i, name := range words {
		words[i] = kind + "/" + name
	}
	return words, noFiles
}

// completePolicy completes tree's --policy with the names of the running policies.
func (o *treeOptions) completePolicy(cmd *cobra.Command, _ []string, toComplete string) ([]string, cobra.ShellCompDirective) {
	ctx, cancel := completionContext(cmd)
	defer cancel()
	kube, _, err := o.cluster.clients()
	if err != nil {
		return completionFailed(err)
	}
	parents, err := parentResources(ctx, kube, o.policyNamespace)
	if err != nil {
		return completionFailed(err)
	}
	var names []string
	for _, p := range parents {
		names = append(names, p.policies...)
	}
	return withPrefix(slices.Compact(slices.Sorted(slices.Values(names))), toComplete), noFiles
}

// parentResource is the parent resource of running policies, as discovery knows it.
type parentResource struct {
	gvr schema.GroupVersionResource
	// kind is the lowercase kind of the resource's objects, "" when the cluster does not serve it
	kind       string
	namespaced bool
	policies   []string
}

// words are the spellings of the resource that tree takes for KIND: the kind and the resource,
// each alone and with the group.
func (p parentResource) words() []string {
	words := []string{p.gvr.Resource, p.gvr.Resource + "." + p.gvr.Group}
	if p.kind != "" {
		words = append(words, p.kind, p.kind+"."+p.gvr.Group)
	}
	return words
}

// parentResources are the parent resources of the policies in the labelled ConfigMaps of the
// policy namespace, sorted, each with its kind and scope from discovery.
func parentResources(ctx context.Context, kube kubernetes.Interface, policyNamespace string) ([]parentResource, error) {
	units, err := clusterread.PolicyUnits(ctx, kube, policyNamespace)
	if err != nil {
		return nil, err
	}
	byGVR := map[schema.GroupVersionResource]*parentResource{}
	for _, u := range units {
		docs, _ := policy.Parse(u.Name, u.Data)
		for _, d := range docs {
			if d.Policy == nil {
				continue
			}
			gv, err := schema.ParseGroupVersion(d.Policy.Spec.ParentResource.APIVersion)
			if err != nil {
				continue
			}
			gvr := gv.WithResource(d.Policy.Spec.ParentResource.Resource)
			if byGVR[gvr] == nil {
				byGVR[gvr] = &parentResource{gvr: gvr, namespaced: true}
			}
			byGVR[gvr].policies = append(byGVR[gvr].policies, d.Policy.Metadata.Name)
		}
	}
	out := make([]parentResource, 0, len(byGVR))
	for _, p := range byGVR {
		discover(kube, p)
		out = append(out, *p)
	}
	slices.SortFunc(out, func(a, b parentResource) int {
		return cmp.Or(strings.Compare(a.gvr.Resource, b.gvr.Resource), strings.Compare(a.gvr.Group, b.gvr.Group))
	})
	return out, nil
}

// discover sets the kind and scope of p from the API server's discovery of its group version;
// unknown to the cluster, p keeps its resource alone.
func discover(kube kubernetes.Interface, p *parentResource) {
	list, err := kube.Discovery().ServerResourcesForGroupVersion(p.gvr.GroupVersion().String())
	if err != nil {
		cobra.CompDebugln(fmt.Sprintf("discover %s: %v", p.gvr, err), false)
		return
	}
	for _, r := range list.APIResources {
		if r.Name == p.gvr.Resource {
			p.kind, p.namespaced = strings.ToLower(r.Kind), r.Namespaced
		}
	}
}

// kindWords are the words offered before KIND/NAME's slash: each parent's lowercase kind (its
// resource, when the cluster does not serve it), followed by the slash.
func kindWords(parents []parentResource) []string {
	var words []string
	for _, p := range parents {
		words = append(words, cmp.Or(p.kind, p.gvr.Resource)+"/")
	}
	return slices.Compact(slices.Sorted(slices.Values(words)))
}

// parentNames are the names of the parents whose resource kind names (as tree reads KIND), in
// namespace for a namespaced resource, sorted.
func parentNames(ctx context.Context, dyn dynamic.Interface, parents []parentResource, kind, namespace string) ([]string, error) {
	var names []string
	for _, p := range parents {
		if !slices.Contains(p.words(), strings.ToLower(kind)) {
			continue
		}
		ns := namespace
		if !p.namespaced {
			ns = ""
		}
		list, err := dyn.Resource(p.gvr).Namespace(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return nil, fmt.Errorf("list %s: %w", p.gvr.Resource, err)
		}
		for _, item := range list.Items {
			names = append(names, item.GetName())
		}
	}
	return slices.Compact(slices.Sorted(slices.Values(names))), nil
}

// withPrefix are the words that begin with prefix, as the shell would keep them.
func withPrefix(words []string, prefix string) []string {
	out := []string{}
	for _, w := range words {
		if strings.HasPrefix(w, prefix) {
			out = append(out, w)
		}
	}
	return out
}

// completionContext is the context of one completion: the command's, bounded.
func completionContext(cmd *cobra.Command) (context.Context, context.CancelFunc) {
	ctx := cmd.Context()
	if ctx == nil {
		ctx = context.Background()
	}
	return context.WithTimeout(ctx, completionTimeout)
}

// completionFailed offers nothing: the shell shows no error, the reason goes to cobra's debug log
// ($BASH_COMP_DEBUG_FILE).
func completionFailed(err error) ([]string, cobra.ShellCompDirective) {
	cobra.CompDebugln(err.Error(), false)
	return nil, noFiles
}

// outputCompletion completes an --output flag with its values.
func outputCompletion(values ...string) cobra.CompletionFunc {
	return cobra.FixedCompletions(values, noFiles)
}
