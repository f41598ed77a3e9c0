package main

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/spf13/cobra"
)

// twoContexts is a kubeconfig of two clusters, a context for each, the first current.
const twoContexts = `apiVersion: v1
kind: Config
clusters:
- name: a
  cluster: {server: "https://a.example:6443"}
- name: b
  cluster: {server: "https://b.example:6443"}
users:
- name: alice
  user: {token: alice-token}
- name: bob
  user: {token: bob-token}
contexts:
- name: ctx-a
  context: {cluster: a, user: alice, namespace: ns-a}
- name: ctx-b
  context: {cluster: b, user: bob, namespace: ns-b}
current-context: ctx-a
`

// oneContext is a kubeconfig of one cluster, with no namespace.
const oneContext = `apiVersion: v1
kind: Config
clusters:
- name: c
  cluster: {server: "https://c.example:6443"}
users:
- name: carol
  user: {token: carol-token}
contexts:
- name: ctx-c
  context: {cluster: c, user: carol}
current-context: ctx-c
`

func writeKubeconfig(t *testing.T, name, text string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestClusterFlagsChooseTheClusterAndIdentityAsKubectlDoes: the kubeconfig is --kubeconfig, else
// $KUBECONFIG; --context, --cluster and --server choose the cluster, --as, --as-group and
// --as-user-extra whom the requests impersonate, --request-timeout bounds them, and the namespace
// is -n, else the chosen context's; no kubeconfig at all is an error.
func TestClusterFlagsChooseTheClusterAndIdentityAsKubectlDoes(t *testing.T) {
	t.Setenv("KUBECONFIG", writeKubeconfig(t, "config", twoContexts))
	t.Setenv("KUBERNETES_SERVICE_HOST", "") // not in a Pod, whatever runs the test
	other := writeKubeconfig(t, "other", oneContext)
	empty := writeKubeconfig(t, "empty", "")
	tests := []struct {
		name      string
		args      []string
		host      string
		token     string
		as        string
		groups    []string
		extra     map[string][]string
		timeout   time.Duration
		namespace string
		given     bool
		wantErr   string
	}{
		{name: "no flag: $KUBECONFIG's current context", host: "https://a.example:6443", token: "alice-token", namespace: "ns-a"},
		{name: "--kubeconfig rather than $KUBECONFIG", args: []string{"--kubeconfig", other},
			host: "https://c.example:6443", token: "carol-token", namespace: "default", given: true},
		{name: "--context chooses the cluster, the user and the namespace", args: []string{"--context", "ctx-b"},
			host: "https://b.example:6443", token: "bob-token", namespace: "ns-b", given: true},
		{name: "--cluster of the current context", args: []string{"--cluster", "b"},
			host: "https://b.example:6443", token: "alice-token", namespace: "ns-a", given: true},
		{name: "--user of the current context", args: []string{"--user", "bob"},
			host: "https://a.example:6443", token: "bob-token", namespace: "ns-a", given: true},
		{name: "-s, the server", args: []string{"-s", "https://d.example"},
			host: "https://d.example", token: "alice-token", namespace: "ns-a", given: true},
		{name: "--as impersonates a user", args: []string{"--as", "jane"},
			host: "https://a.example:6443", token: "alice-token", as: "jane", namespace: "ns-a", given: true},
		{name: "--context and --as together", args: []string{"--context", "ctx-b", "--as", "system:serviceaccount:shop:deployer"},
			host: "https://b.example:6443", token: "bob-token", as: "system:serviceaccount:shop:deployer", namespace: "ns-b", given: true},
		{name: "--as-group, repeated, and --as-user-extra", args: []string{"--as", "jane", "--as-group", "dev", "--as-group", "ops", "--as-user-extra", "scopes=view", "--as-user-extra", "scopes=edit"},
			host: "https://a.example:6443", token: "alice-token", as: "jane", groups: []string{"dev", "ops"},
			extra: map[string][]string{"scopes": {"view", "edit"}}, namespace: "ns-a", given: true},
		{name: "--request-timeout", args: []string{"--request-timeout", "5s"},
			host: "https://a.example:6443", token: "alice-token", timeout: 5 * time.Second, namespace: "ns-a", given: true},
		{name: "-n rather than the context's namespace", args: []string{"-n", "shop"},
			host: "https://a.example:6443", token: "alice-token", namespace: "shop", given: true},
		{name: "--context, --as, --as-group, --request-timeout and --namespace together",
			args: []string{"--context", "ctx-b", "--as", "jane", "--as-group", "dev", "--request-timeout", "1m", "--namespace", "shop"},
			host: "https://b.example:6443", token: "bob-token", as: "jane", groups: []string{"dev"}, timeout: time.Minute, namespace: "shop", given: true},
		{name: "--token and --server with no kubeconfig", args: []string{"--kubeconfig", empty, "-s", "https://e.example", "--token", "t"},
			host: "https://e.example", token: "t", namespace: "default", given: true},
		{name: "a request timeout that is not a duration", args: []string{"--request-timeout", "soon"}, wantErr: `kubeconfig "": Invalid timeout value`},
		{name: "no kubeconfig, no cluster in it, no --server", args: []string{"--kubeconfig", empty}, wantErr: errNoKubeconfig.Error()},
		{name: "a context the kubeconfig does not have", args: []string{"--context", "ctx-z"}, wantErr: `context "ctx-z" does not exist`},
		{name: "a kubeconfig that does not exist", args: []string{"--kubeconfig", "/nonexistent/kubeconfig"}, wantErr: `kubeconfig "/nonexistent/kubeconfig": `},
		{name: "an --as-user-extra without a value", args: []string{"--as-user-extra", "scopes"}, wantErr: `--as-user-extra "scopes": want KEY=VALUE`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cmd := &cobra.Command{Use: "test"}
			c := addClusterFlags(cmd, "kubeconfig", withNamespace)
			if err := cmd.ParseFlags(tt.args); err != nil {
				t.Fatal(err)
			}
			cfg, err := c.restConfig("metacel-test/dev")
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if cfg.Host != tt.host || cfg.BearerToken != tt.token || cfg.UserAgent != "metacel-test/dev" {
				t.Errorf("host %q, token %q, user agent %q; want %q, %q, metacel-test/dev", cfg.Host, cfg.BearerToken, cfg.UserAgent, tt.host, tt.token)
			}
			imp := cfg.Impersonate
			if imp.UserName != tt.as || !slices.Equal(imp.Groups, tt.groups) || len(imp.Extra) != len(tt.extra) || !slices.Equal(imp.Extra["scopes"], tt.extra["scopes"]) {
				t.Errorf("impersonating %+v, want user %q, groups %q, extra %v", imp, tt.as, tt.groups, tt.extra)
			}
			if cfg.Timeout != tt.timeout {
				t.Errorf("timeout %v, want %v", cfg.Timeout, tt.timeout)
			}
			if ns := c.namespace(); ns != tt.namespace {
				t.Errorf("namespace %q, want %q", ns, tt.namespace)
			}
			if c.given() != tt.given {
				t.Errorf("given() = %v, want %v", c.given(), tt.given)
			}
		})
	}
}

// clusterFlagNames are kubectl's cluster flags, which every command that reaches a cluster takes.
var clusterFlagNames = []string{"kubeconfig", "context", "cluster", "user", "server", "tls-server-name",
	"certificate-authority", "client-certificate", "client-key", "token", "insecure-skip-tls-verify",
	"as", "as-group", "as-uid", "as-user-extra", "request-timeout", "disable-compression"}

// TestCommandsThatReachAClusterTakeTheClusterFlags: run, plan, tree and validate take every
// cluster flag, next to their own flags, which keep their names, shorthands and meanings.
func TestCommandsThatReachAClusterTakeTheClusterFlags(t *testing.T) {
	commands := map[string]func() *cobra.Command{
		"run": newRunCommand, "plan": newPlanCommand, "tree": newTreeCommand, "validate": newValidateCommand,
	}
	for name, newCommand := range commands {
		t.Run(name+" takes the cluster flags", func(t *testing.T) {
			f := newCommand().Flags()
			for _, flag := range clusterFlagNames {
				if f.Lookup(flag) == nil {
					t.Errorf("no --%s", flag)
				}
			}
			for _, flag := range []string{"username", "password", "cache-dir", "proxy-url"} {
				if f.Lookup(flag) != nil {
					t.Errorf("--%s, which kubectl's cluster flags do not have or metacel does not use", flag)
				}
			}
		})
	}
	tests := []struct {
		name    string
		command string
		args    []string
		want    map[string]string // flag: value
		wantErr string
	}{
		{name: "tree: -n is the parent's namespace", command: "tree", args: []string{"-n", "shop", "--context", "ctx-b"},
			want: map[string]string{"namespace": "shop", "context": "ctx-b"}},
		{name: "tree: --namespace and --kubeconfig", command: "tree", args: []string{"--namespace", "shop", "--kubeconfig", "k", "--policy-namespace", "p"},
			want: map[string]string{"namespace": "shop", "kubeconfig": "k", "policy-namespace": "p"}},
		{name: "plan: --namespace is the policy namespace", command: "plan", args: []string{"--namespace", "ops", "--kubeconfig", "k", "--as", "jane"},
			want: map[string]string{"namespace": "ops", "kubeconfig": "k", "as": "jane"}},
		{name: "plan: --namespace defaults to metacel-system", command: "plan", args: []string{"--context", "ctx-b"},
			want: map[string]string{"namespace": "metacel-system", "context": "ctx-b"}},
		{name: "plan: no -n, whose meaning would differ from --namespace's", command: "plan", args: []string{"-n", "ops"},
			wantErr: "unknown shorthand flag: 'n'"},
		{name: "run: its own client limits next to the cluster flags", command: "run",
			args: []string{"--kubeconfig", "k", "--kube-api-qps", "20", "--kube-api-burst", "40", "--context", "ctx-b", "--request-timeout", "10s"},
			want: map[string]string{"kubeconfig": "k", "kube-api-qps": "20", "kube-api-burst": "40", "context": "ctx-b", "request-timeout": "10s"}},
		{name: "run: no namespace flag", command: "run", args: []string{"--namespace", "ops"}, wantErr: "unknown flag: --namespace"},
		{name: "validate: --crd and --kubeconfig", command: "validate", args: []string{"--crd", "c.yaml", "--kubeconfig", "k", "--as", "jane"},
			want: map[string]string{"crd": "[c.yaml]", "kubeconfig": "k", "as": "jane"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cmd := commands[tt.command]()
			err := cmd.ParseFlags(tt.args)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			for flag, want := range tt.want {
				if got := cmd.Flags().Lookup(flag).Value.String(); got != want {
					t.Errorf("--%s = %q, want %q", flag, got, want)
				}
			}
		})
	}
}

// TestValidateReachesAClusterOnlyWhenOneIsNamed: without a cluster flag, validate stays offline
// whatever $KUBECONFIG says; with --context (as with --kubeconfig), it looks the cluster up.
func TestValidateReachesAClusterOnlyWhenOneIsNamed(t *testing.T) {
	t.Setenv("KUBECONFIG", writeKubeconfig(t, "config", twoContexts))
	policyFile := filepath.Join(repo, "policies", "myapp.yaml")
	if _, _, err := runCLI(t, "validate", policyFile); err != nil {
		t.Errorf("validate without a cluster flag: %v", err)
	}
	_, _, err := runCLI(t, "validate", policyFile, "--context", "ctx-z")
	if want := `context "ctx-z" does not exist`; err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("validate --context ctx-z: error %v, want %q", err, want)
	}
}
