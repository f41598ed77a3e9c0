package main

import (
	"bytes"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	fakediscovery "k8s.io/client-go/discovery/fake"
	"k8s.io/client-go/dynamic"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
)

// completionPolicies are three running policies: of Widgets (namespaced), of Racks (cluster
// scoped) and of Gizmos, which the cluster does not serve; and a ConfigMap of policy-namespace
// ns-other that is not labelled.
func completionPolicies() []runtime.Object {
	policyCM := func(ns, name, text string, labelled bool) *corev1.ConfigMap {
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Data: map[string]string{"policy.yaml": text}}
		if labelled {
			cm.Labels = map[string]string{"metacel.dev/policy": "true"}
		}
		return cm
	}
	policy := func(name, apiVersion, resource string) string {
		return fmt.Sprintf("apiVersion: metacel.dev/v1alpha1\nkind: CompositePolicy\nmetadata: {name: %s}\nspec:\n  parentResource: {apiVersion: %s, resource: %s}\n", name, apiVersion, resource)
	}
	return []runtime.Object{
		policyCM("metacel-system", "widgets", policy("widgeted", "e2e.metacel.dev/v1", "widgets")+"---\n"+policy("widgeted-too", "e2e.metacel.dev/v1", "widgets"), true),
		policyCM("metacel-system", "racks", policy("racked", "infra.metacel.dev/v1", "racks"), true),
		policyCM("metacel-system", "gizmos", policy("gizmoed", "toys.metacel.dev/v1", "gizmos"), true),
		policyCM("metacel-system", "notes", "not a policy", false),
		policyCM("ns-other", "others", policy("othered", "e2e.metacel.dev/v1", "others"), true),
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "shop"}},
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "ns-a"}},
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "metacel-system"}},
	}
}

var (
	widgetsGVR = schema.GroupVersionResource{Group: "e2e.metacel.dev", Version: "v1", Resource: "widgets"}
	racksGVR   = schema.GroupVersionResource{Group: "infra.metacel.dev", Version: "v1", Resource: "racks"}
)

// fakeCluster serves the policies, the Widgets and Racks, and discovery of both.
func fakeCluster() (kubernetes.Interface, dynamic.Interface) {
	kube := fake.NewClientset(completionPolicies()...)
	kube.Discovery().(*fakediscovery.FakeDiscovery).Resources = []*metav1.APIResourceList{
		{GroupVersion: "e2e.metacel.dev/v1", APIResources: []metav1.APIResource{{Name: "widgets", Kind: "Widget", Namespaced: true}}},
		{GroupVersion: "infra.metacel.dev/v1", APIResources: []metav1.APIResource{{Name: "racks", Kind: "Rack"}}},
	}
	object := func(gvr schema.GroupVersionResource, kind, ns, name string) runtime.Object {
		u := &unstructured.Unstructured{}
		u.SetAPIVersion(gvr.GroupVersion().String())
		u.SetKind(kind)
		u.SetNamespace(ns)
		u.SetName(name)
		return u
	}
	dyn := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(),
		map[schema.GroupVersionResource]string{widgetsGVR: "WidgetList", racksGVR: "RackList"},
		object(widgetsGVR, "Widget", "ns-a", "alpha"), object(widgetsGVR, "Widget", "ns-a", "beta"),
		object(widgetsGVR, "Widget", "shop", "basket"), object(racksGVR, "Rack", "", "r1"), object(racksGVR, "Rack", "", "r2"))
	return kube, dyn
}

// complete runs `metacel __complete ARGS...` (what a shell's completion script runs) with tree's
// completions asking kube and dyn, and returns the words and the directive.
func complete(t *testing.T, kube kubernetes.Interface, dyn dynamic.Interface, args ...string) ([]string, string) {
	t.Helper()
	root := newRootCommand()
	o := &treeOptions{}
	tree := o.command()
	o.cluster.connect = func() (kubernetes.Interface, dynamic.Interface, error) { return kube, dyn, nil }
	for _, c := range root.Commands() {
		if c.Name() == "tree" {
			root.RemoveCommand(c)
		}
	}
	root.AddCommand(tree)
	var out bytes.Buffer
	root.SetOut(&out)
	root.SetErr(&bytes.Buffer{})
	root.SetArgs(append([]string{cobra.ShellCompRequestCmd}, args...))
	if err := root.ExecuteContext(t.Context()); err != nil {
		t.Fatalf("__complete %q: %v", args, err)
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	return lines[:len(lines)-1], lines[len(lines)-1]
}

const (
	wordsOnly    = ":4" // cobra.ShellCompDirectiveNoFileComp
	kindsNoSpace = ":6" // and NoSpace: the name follows the kind's slash
)

// TestTreeCompletesKindsAndParentNames: tree's KIND/NAME completes, before the slash, with the
// kinds of the running policies' parents (lowercase; the resource of one the cluster does not
// serve) and, after it, with the names of the parents of that kind, however KIND is spelt, in -n
// or the context's namespace (any namespace for a cluster-scoped kind); --policy with the names
// of the running policies, of --policy-namespace.
func TestTreeCompletesKindsAndParentNames(t *testing.T) {
	t.Setenv("KUBECONFIG", writeKubeconfig(t, "config", twoContexts)) // ctx-a's namespace: ns-a
	tests := []struct {
		name      string
		args      []string
		want      []string
		directive string
	}{
		{name: "the kinds, each with its slash", args: []string{"tree", ""}, want: []string{"gizmos/", "rack/", "widget/"}, directive: kindsNoSpace},
		{name: "the kinds that begin with what is typed", args: []string{"tree", "w"}, want: []string{"widget/"}, directive: kindsNoSpace},
		{name: "the kinds of another policy namespace", args: []string{"tree", "--policy-namespace", "ns-other", ""}, want: []string{"others/"}, directive: kindsNoSpace},
		{name: "the names in the context's namespace", args: []string{"tree", "widget/"}, want: []string{"widget/alpha", "widget/beta"}, directive: wordsOnly},
		{name: "the names that begin with what is typed", args: []string{"tree", "widget/b"}, want: []string{"widget/beta"}, directive: wordsOnly},
		{name: "the names in -n's namespace", args: []string{"tree", "-n", "shop", "widget/"}, want: []string{"widget/basket"}, directive: wordsOnly},
		{name: "the names in --context's namespace", args: []string{"tree", "--context", "ctx-b", "widget/"}, want: []string{}, directive: wordsOnly},
		{name: "the kind as a resource with its group", args: []string{"tree", "widgets.e2e.metacel.dev/a"}, want: []string{"widgets.e2e.metacel.dev/alpha"}, directive: wordsOnly},
		{name: "a cluster-scoped kind: every name", args: []string{"tree", "-n", "shop", "Rack/"}, want: []string{"Rack/r1", "Rack/r2"}, directive: wordsOnly},
		{name: "a kind no policy has", args: []string{"tree", "pod/"}, want: []string{}, directive: wordsOnly},
		{name: "nothing after KIND/NAME", args: []string{"tree", "widget/alpha", ""}, want: nil, directive: wordsOnly},
		{name: "--policy: the running policies", args: []string{"tree", "--policy", ""}, want: []string{"gizmoed", "racked", "widgeted", "widgeted-too"}, directive: wordsOnly},
		{name: "-n: the cluster's namespaces", args: []string{"tree", "-n", ""}, want: []string{"metacel-system", "ns-a", "shop"}, directive: wordsOnly},
		{name: "--policy-namespace: the namespaces that begin with what is typed", args: []string{"tree", "--policy-namespace", "s"}, want: []string{"shop"}, directive: wordsOnly},
		{name: "--output: its values", args: []string{"tree", "-o", ""}, want: []string{"text", "wide", "json"}, directive: wordsOnly},
	}
	kube, dyn := fakeCluster()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, directive := complete(t, kube, dyn, tt.args...)
			if !slices.Equal(got, tt.want) || directive != tt.directive { // nil and empty alike
				t.Errorf("words %q, directive %s; want %q, %s", got, directive, tt.want, tt.directive)
			}
		})
	}
}

// TestTreeCompletionOffersNothingWhenTheClusterFails: a completion that cannot read the policies
// offers no word (and no file name), rather than an error in the middle of the command line.
func TestTreeCompletionOffersNothingWhenTheClusterFails(t *testing.T) {
	t.Setenv("KUBECONFIG", writeKubeconfig(t, "config", twoContexts))
	kube, dyn := fakeCluster()
	kube.(*fake.Clientset).PrependReactor("list", "configmaps", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, errors.New("forbidden")
	})
	for _, args := range [][]string{{"tree", ""}, {"tree", "widget/"}, {"tree", "--policy", ""}} {
		if got, directive := complete(t, kube, dyn, args...); len(got) != 0 || directive != wordsOnly {
			t.Errorf("%q: words %q, directive %s; want none, %s", args, got, directive, wordsOnly)
		}
	}
}

// TestClusterFlagsCompleteFromTheKubeconfig: --context, --cluster and --user complete with the
// names the kubeconfig (--kubeconfig, else $KUBECONFIG) defines, on every command that reaches a
// cluster.
func TestClusterFlagsCompleteFromTheKubeconfig(t *testing.T) {
	t.Setenv("KUBECONFIG", writeKubeconfig(t, "config", twoContexts))
	other := writeKubeconfig(t, "other", oneContext)
	tests := []struct {
		name string
		args []string
		want []string
	}{
		{name: "tree --context", args: []string{"tree", "--context", ""}, want: []string{"ctx-a", "ctx-b"}},
		{name: "plan --context, what is typed", args: []string{"plan", "--context", "ctx-b"}, want: []string{"ctx-b"}},
		{name: "run --cluster", args: []string{"run", "--cluster", ""}, want: []string{"a", "b"}},
		{name: "validate --user", args: []string{"validate", "--user", ""}, want: []string{"alice", "bob"}},
		{name: "--kubeconfig's contexts", args: []string{"tree", "--kubeconfig", other, "--context", ""}, want: []string{"ctx-c"}},
		{name: "plan --output", args: []string{"plan", "-o", ""}, want: []string{"text", "json"}},
		{name: "validate --output", args: []string{"validate", "-o", ""}, want: []string{"text", "graph"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, _, err := runCLI(t, append([]string{cobra.ShellCompRequestCmd}, tt.args...)...)
			if err != nil {
				t.Fatal(err)
			}
			lines := strings.Split(strings.TrimSpace(out), "\n")
			if got := lines[:len(lines)-1]; !slices.Equal(got, tt.want) || lines[len(lines)-1] != wordsOnly {
				t.Errorf("%s", out)
			}
		})
	}
}

// TestCobrasCompletionCommandWritesEachShellsScript: `metacel completion SHELL` writes the script
// that asks the binary for its words.
func TestCobrasCompletionCommandWritesEachShellsScript(t *testing.T) {
	for shell, want := range map[string]string{
		"bash": "__metacel_get_completion_results", "zsh": "#compdef metacel",
		"fish": "complete -c metacel", "powershell": "Register-ArgumentCompleter",
	} {
		t.Run(shell, func(t *testing.T) {
			out, _, err := runCLI(t, "completion", shell)
			if err != nil || !strings.Contains(out, want) || !strings.Contains(out, cobra.ShellCompRequestCmd) {
				t.Errorf("completion %s: %v, want a script with %q:\n%.300s", shell, err, want, out)
			}
		})
	}
}

// TestAsKubectlPluginTheUsageSaysKubectlMetacel: run as kubectl-metacel (kubectl's plugin), the
// usage and help name the command `kubectl metacel`; run as metacel, `metacel`.
func TestAsKubectlPluginTheUsageSaysKubectlMetacel(t *testing.T) {
	tests := []struct {
		arg0, want, notWant string
	}{
		{"/home/me/.krew/bin/kubectl-metacel", "kubectl metacel tree KIND/NAME", "\n  metacel tree"},
		{"bin/metacel", "\n  metacel tree KIND/NAME", "kubectl metacel"},
	}
	for _, tt := range tests {
		t.Run(tt.arg0, func(t *testing.T) {
			root := newRootCommand()
			asKubectlPlugin(root, tt.arg0)
			var out bytes.Buffer
			root.SetOut(&out)
			root.SetArgs([]string{"tree", "--help"})
			if err := root.Execute(); err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(out.String(), tt.want) || strings.Contains(out.String(), tt.notWant) {
				t.Errorf("help, want %q and no %q:\n%s", tt.want, tt.notWant, out.String())
			}
		})
	}
}
