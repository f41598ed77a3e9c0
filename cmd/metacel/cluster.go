package main

import (
	"errors"
	"fmt"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

// clusterFlags are the flags with which a command reaches a cluster, and the one place the
// commands load a kubeconfig: kubectl's own, k8s.io/cli-runtime's genericclioptions.ConfigFlags
// (--kubeconfig, --context, --cluster, --user, -s/--server, --token, --as, --as-group, --as-uid,
// --as-user-extra, --request-timeout, ...), read as kubectl reads them: --kubeconfig, else
// $KUBECONFIG, else ~/.kube/config, else in cluster.
//
// -n/--namespace is ConfigFlags' where the command's namespace is kubectl's (tree's parent);
// plan's --namespace is the policy namespace, its own. --cache-dir, kubectl's disk cache of
// discovery, is left out: no command uses it. Unlike kubectl, no kubeconfig at all (and no
// in-cluster config, no --server) is an error, not a client of http://localhost:8080. As with
// kubectl, a Pod's in-cluster config is used only when no cluster flag changes it: ConfigFlags
// then fall back to that address, which is the error too, where a flag such as --as used to be
// dropped without a word.
//
// ConfigFlags' package links in kustomize, which imports Go's plugin package: with cgo, the
// linker then keeps every method of every type in case a plugin calls it, and the binary doubles
// (67 to 128 MB, and 40 MB more resident at start). Built with CGO_ENABLED=0, as the Makefile and
// the Dockerfile build it, the plugin package is inert and ConfigFlags costs 1 MB.
type clusterFlags struct {
	config *genericclioptions.ConfigFlags
	// flags are the cluster flags, shared with the command's flag set: whether one was given
	flags *pflag.FlagSet
	// connect, when set, gives the clients completions ask instead of those of the flags (tests)
	connect func() (kubernetes.Interface, dynamic.Interface, error)
}

// namespaceFlag says whether a command's -n/--namespace is kubectl's.
type namespaceFlag bool

const (
	withNamespace    namespaceFlag = true
	withoutNamespace namespaceFlag = false
)

// errNoKubeconfig is the error of a command that found no cluster to reach.
var errNoKubeconfig = errors.New("no kubeconfig: give --kubeconfig, set $KUBECONFIG or write ~/.kube/config (in a Pod, its ServiceAccount is used when no cluster flag is given)")

// addClusterFlags registers the cluster flags on cmd, with the completion of their values, and
// returns them; kubeconfigUsage is the help of --kubeconfig, which says what the command does
// with the cluster.
func addClusterFlags(cmd *cobra.Command, kubeconfigUsage string, ns namespaceFlag) *clusterFlags {
	cf := genericclioptions.NewConfigFlags(true)
	cf.CacheDir = nil
	if !ns {
		cf.Namespace = nil
	}
	ours := pflag.NewFlagSet("cluster", pflag.ContinueOnError)
	cf.AddFlags(ours)
	ours.Lookup("kubeconfig").Usage = kubeconfigUsage
	cmd.Flags().AddFlagSet(ours)
	c := &clusterFlags{config: cf, flags: ours}
	c.registerCompletions(cmd)
	return c
}

// kubeconfig is the --kubeconfig given, "" for none.
func (c *clusterFlags) kubeconfig() string { return *c.config.KubeConfig }

// given reports whether a cluster was named on the command line: a --kubeconfig, or any other
// cluster flag.
func (c *clusterFlags) given() bool {
	given := c.kubeconfig() != ""
	c.flags.VisitAll(func(f *pflag.Flag) {
		given = given || (f.Changed && f.Name != "kubeconfig")
	})
	return given
}

// loader is the client configuration of the flags, loaded as kubectl loads it.
func (c *clusterFlags) loader() clientcmd.ClientConfig { return c.config.ToRawKubeConfigLoader() }

// restConfig is the configuration of a client of the cluster, whose requests name userAgent
// (command/version).
func (c *clusterFlags) restConfig(userAgent string) (*rest.Config, error) {
	if err := c.checkUserExtra(); err != nil {
		return nil, err
	}
	cfg, err := c.config.ToRESTConfig()
	if err != nil {
		return nil, fmt.Errorf("kubeconfig %q: %w", c.kubeconfig(), err)
	}
	if c.fellBack(cfg) {
		return nil, errNoKubeconfig
	}
	cfg.UserAgent = userAgent
	return cfg, nil
}

// checkUserExtra refuses an --as-user-extra that is not KEY=VALUE, which ConfigFlags would drop.
func (c *clusterFlags) checkUserExtra() error {
	for _, kv := range *c.config.ImpersonateUserExtra {
		if k, _, ok := strings.Cut(kv, "="); !ok || k == "" {
			return fmt.Errorf("--as-user-extra %q: want KEY=VALUE", kv)
		}
	}
	return nil
}

// fellBack reports whether cfg is kubectl's last resort, http://localhost:8080, when there is no
// kubeconfig, no in-cluster config and no --server.
func (c *clusterFlags) fellBack(cfg *rest.Config) bool {
	if cfg.Host != clientcmd.ClusterDefaults.Server || *c.config.APIServer != "" {
		return false
	}
	raw, err := c.loader().RawConfig()
	return err != nil || len(raw.Clusters) == 0
}

// namespace is -n where the command has kubectl's, else the namespace of the kubeconfig's
// context (--context, else the current one), else default.
func (c *clusterFlags) namespace() string {
	if ns, _, err := c.loader().Namespace(); err == nil && ns != "" {
		return ns
	}
	return "default"
}

// reach returns the clients of cfg once the cluster answers, so that a command that cannot reach
// it fails at once, naming the kubeconfig, rather than at its first read.
func (c *clusterFlags) reach(cfg *rest.Config) (kubernetes.Interface, dynamic.Interface, error) {
	kube, dyn, err := clientsOf(cfg)
	if err != nil {
		return nil, nil, fmt.Errorf("kubeconfig %q: %w", c.kubeconfig(), err)
	}
	if _, err := kube.Discovery().ServerVersion(); err != nil {
		return nil, nil, fmt.Errorf("cannot reach the cluster of kubeconfig %q: %w", c.kubeconfig(), err)
	}
	return kube, dyn, nil
}

// clientsOf returns the typed and dynamic clients of cfg.
func clientsOf(cfg *rest.Config) (kubernetes.Interface, dynamic.Interface, error) {
	kube, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, nil, err
	}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return nil, nil, err
	}
	return kube, dyn, nil
}
