package main

import (
	"fmt"
	"strings"

	"github.com/spf13/pflag"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

// clusterFlags are the flags with which a command reaches a cluster, and the one place the
// commands load a kubeconfig: kubectl's cluster flags (--kubeconfig, --context, --cluster, --user,
// --server, --token, --as, --as-group, --as-uid, --as-user-extra, --request-timeout, ...), read as
// kubectl reads them: --kubeconfig, else $KUBECONFIG, else ~/.kube/config, else in cluster.
//
// They are bound with client-go's clientcmd (BindOverrideFlags), not with k8s.io/cli-runtime's
// genericclioptions.ConfigFlags, which registers the same flags: that package links in kustomize,
// kubectl's printers and text/template (whose reflection keeps every exported method of the
// binary), and it doubled the binary (59 MB to 117 MB) for these flags alone. The flags are
// ConfigFlags' but for -n/--namespace, which is the command's own where it has one (plan's
// --namespace is the policy namespace, not kubectl's), and --cache-dir, kubectl's disk cache of
// discovery, which no command uses. Unlike ConfigFlags, no kubeconfig at all is an error (in a
// Pod, the in-cluster config), not a client of http://localhost:8080.
type clusterFlags struct {
	kubeconfig string
	overrides  clientcmd.ConfigOverrides
	// userExtra are the --as-user-extra KEY=VALUE pairs, which clientcmd does not bind
	userExtra []string
	// flags are the cluster flags, shared with the command's flag set: whether one was given
	flags *pflag.FlagSet
}

// addClusterFlags registers the cluster flags on fs and returns them; kubeconfigUsage is the help
// of --kubeconfig, which says what the command does with the cluster.
func addClusterFlags(fs *pflag.FlagSet, kubeconfigUsage string) *clusterFlags {
	c := &clusterFlags{}
	ours := pflag.NewFlagSet("cluster", pflag.ContinueOnError)
	ours.StringVar(&c.kubeconfig, "kubeconfig", "", kubeconfigUsage)
	names := clientcmd.RecommendedConfigOverrideFlags("")
	// as genericclioptions.ConfigFlags: -s for --server, no basic authentication (deprecated)
	// and no proxy URL flag; the namespace is the command's own
	names.ClusterOverrideFlags.APIServer.ShortName = "s"
	names.AuthOverrideFlags.Username.LongName = ""
	names.AuthOverrideFlags.Password.LongName = ""
	names.ClusterOverrideFlags.ProxyURL.LongName = ""
	names.ContextOverrideFlags.Namespace.LongName = ""
	clientcmd.BindOverrideFlags(&c.overrides, ours, names)
	ours.StringArrayVar(&c.userExtra, "as-user-extra", nil, "User extras to impersonate for the operation, this flag can be repeated to specify multiple values for the same key.")
	fs.AddFlagSet(ours)
	c.flags = ours
	return c
}

// given reports whether a cluster was named on the command line: a --kubeconfig, or any other
// cluster flag.
func (c *clusterFlags) given() bool {
	given := c.kubeconfig != ""
	c.flags.VisitAll(func(f *pflag.Flag) {
		given = given || (f.Changed && f.Name != "kubeconfig")
	})
	return given
}

// loader is the client configuration of the flags, loaded as kubectl loads it.
func (c *clusterFlags) loader() (clientcmd.ClientConfig, error) {
	overrides := c.overrides
	if len(c.userExtra) > 0 {
		overrides.AuthInfo.ImpersonateUserExtra = map[string][]string{}
		for _, kv := range c.userExtra {
			k, v, ok := strings.Cut(kv, "=")
			if !ok || k == "" {
				return nil, fmt.Errorf("--as-user-extra %q: want KEY=VALUE", kv)
			}
			overrides.AuthInfo.ImpersonateUserExtra[k] = append(overrides.AuthInfo.ImpersonateUserExtra[k], v)
		}
	}
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	rules.ExplicitPath = c.kubeconfig
	return clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &overrides), nil
}

// restConfig is the configuration of a client of the cluster, whose requests name userAgent
// (command/version).
func (c *clusterFlags) restConfig(userAgent string) (*rest.Config, error) {
	loader, err := c.loader()
	if err != nil {
		return nil, err
	}
	cfg, err := loader.ClientConfig()
	if err != nil {
		return nil, fmt.Errorf("kubeconfig %q: %w", c.kubeconfig, err)
	}
	cfg.UserAgent = userAgent
	return cfg, nil
}

// namespace is the namespace of the kubeconfig's context (--context, else the current one), else
// default.
func (c *clusterFlags) namespace() string {
	loader, err := c.loader()
	if err != nil {
		return "default"
	}
	if ns, _, err := loader.Namespace(); err == nil && ns != "" {
		return ns
	}
	return "default"
}

// reach returns the clients of cfg once the cluster answers, so that a command that cannot reach
// it fails at once, naming the kubeconfig, rather than at its first read.
func (c *clusterFlags) reach(cfg *rest.Config) (kubernetes.Interface, dynamic.Interface, error) {
	kube, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, nil, fmt.Errorf("kubeconfig %q: %w", c.kubeconfig, err)
	}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return nil, nil, fmt.Errorf("kubeconfig %q: %w", c.kubeconfig, err)
	}
	if _, err := kube.Discovery().ServerVersion(); err != nil {
		return nil, nil, fmt.Errorf("cannot reach the cluster of kubeconfig %q: %w", c.kubeconfig, err)
	}
	return kube, dyn, nil
}
