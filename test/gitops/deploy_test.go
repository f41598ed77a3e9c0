package gitops

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"
	"sigs.k8s.io/yaml"

	"metacel.dev/metacel/runtime/manifest"
	"metacel.dev/metacel/test/mdblocks"
)

// The tests of this file hold deploy/ to what a GitOps tool (or an administrator) renders from
// it: a kustomize overlay of the base, the Helm chart with the values users set.

// kustomize builds an overlay of deploy/ whose kustomization.yaml is kustomization (its
// resources: [base] added), as `kubectl kustomize` does.
func kustomize(t *testing.T, kustomization map[string]any) []*unstructured.Unstructured {
	t.Helper()
	base, err := filepath.Abs(filepath.Join(root, "deploy"))
	if err != nil {
		t.Fatal(err)
	}
	overlay := t.TempDir()
	rel, err := filepath.Rel(overlay, base) // kustomize takes no absolute path
	if err != nil {
		t.Fatal(err)
	}
	kustomization["resources"] = []any{rel}
	data, err := yaml.Marshal(kustomization)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(overlay, "kustomization.yaml"), data, 0o600); err != nil {
		t.Fatal(err)
	}
	m, err := krusty.MakeKustomizer(krusty.MakeDefaultOptions()).Run(filesys.MakeFsOnDisk(), overlay)
	if err != nil {
		t.Fatalf("kustomize build: %v", err)
	}
	var out []*unstructured.Unstructured
	for _, r := range m.Resources() {
		obj, err := r.Map()
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, &unstructured.Unstructured{Object: obj})
	}
	return out
}

// find returns the object of kind and name in objs, or fails.
func find(t *testing.T, objs []*unstructured.Unstructured, kind, name string) *unstructured.Unstructured {
	t.Helper()
	for _, o := range objs {
		if o.GetKind() == kind && o.GetName() == name {
			return o
		}
	}
	t.Fatalf("no %s %s among the %d objects rendered", kind, name, len(objs))
	return nil
}

// namespaceLabels are a Namespace's labels as the API server keeps them: with
// kubernetes.io/metadata.name, which it sets.
func namespaceLabels(ns *unstructured.Unstructured) labels.Set {
	out := labels.Set{"kubernetes.io/metadata.name": ns.GetName()}
	for k, v := range ns.GetLabels() {
		out[k] = v
	}
	return out
}

// bindingSelects reports whether the ValidatingAdmissionPolicyBinding metacel-policy-authors
// of objs applies to a namespace of these labels.
func bindingSelects(t *testing.T, objs []*unstructured.Unstructured, nsLabels labels.Set) bool {
	t.Helper()
	binding := find(t, objs, "ValidatingAdmissionPolicyBinding", "metacel-policy-authors")
	matchLabels, _, err := unstructured.NestedStringMap(binding.Object, "spec", "matchResources", "namespaceSelector", "matchLabels")
	if err != nil || len(matchLabels) == 0 {
		t.Fatalf("the binding's namespaceSelector has no matchLabels (%v): it would guard every namespace or none", err)
	}
	return labels.SelectorFromSet(matchLabels).Matches(nsLabels)
}

// An overlay that installs metacel into a namespace of its own (namespace: other) keeps the
// guard on who may write policies: the admission policy's binding selects the namespace the
// overlay renders, not metacel-system.
func TestAnOverlaysNamespaceKeepsThePolicyAuthorsGuard(t *testing.T) {
	for _, ns := range []string{"", "other"} {
		kustomization := map[string]any{}
		want := "metacel-system"
		if ns != "" {
			kustomization["namespace"], want = ns, ns
		}
		objs := kustomize(t, kustomization)
		namespace := find(t, objs, "Namespace", want)
		if !bindingSelects(t, objs, namespaceLabels(namespace)) {
			t.Errorf("namespace %q: the binding metacel-policy-authors does not select the policy namespace %s (labels %v): anyone who may write ConfigMaps there may write policies",
				ns, want, namespaceLabels(namespace))
		}
		if want != "metacel-system" && bindingSelects(t, objs, labels.Set{"kubernetes.io/metadata.name": "metacel-system"}) {
			t.Errorf("namespace %q: the binding still selects metacel-system", ns)
		}
	}
}

// findHelm is helm: $METACEL_HELM (`make e2e` sets it), the one `make e2e` builds into the
// cache, or helm on the PATH; "" if there is none.
func findHelm() string {
	if h := os.Getenv("METACEL_HELM"); h != "" {
		return h
	}
	cache := os.Getenv("METACEL_CACHE")
	if cache == "" {
		if home, err := os.UserHomeDir(); err == nil {
			cache = filepath.Join(home, ".cache", "metacel")
		}
	}
	if cache != "" {
		if found, _ := filepath.Glob(filepath.Join(cache, "tools", "helm-*", "helm")); len(found) > 0 {
			return found[len(found)-1]
		}
	}
	if h, err := exec.LookPath("helm"); err == nil {
		return h
	}
	return ""
}

// helmBinary is findHelm's helm; without one the test is skipped.
func helmBinary(t *testing.T) string {
	t.Helper()
	h := findHelm()
	if h == "" {
		t.Skip("no helm: set METACEL_HELM, or run `make e2e` once, which builds it")
	}
	return h
}

// helmTemplate renders the chart into namespace with args (--set ...), and returns the objects,
// or the error and helm's output.
func helmTemplate(t *testing.T, namespace string, args ...string) ([]*unstructured.Unstructured, string, error) {
	t.Helper()
	chart := filepath.Join(root, "deploy", "helm", "metacel")
	// read the chart's files here too: go test's cache then knows the result depends on them
	if err := filepath.WalkDir(chart, func(path string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			_, err = os.ReadFile(path)
		}
		return err
	}); err != nil {
		t.Fatal(err)
	}
	cmd := exec.CommandContext(t.Context(), helmBinary(t), append([]string{"template", "metacel", chart, "--namespace", namespace}, args...)...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, stderr.String(), err
	}
	file := filepath.Join(t.TempDir(), "chart.yaml")
	if err := os.WriteFile(file, out, 0o600); err != nil {
		t.Fatal(err)
	}
	objs, err := manifest.ReadFile(file)
	if err != nil {
		t.Fatalf("helm template printed what is not YAML objects: %v\n%s", err, out)
	}
	return objs, string(out), nil
}

// mustHelmTemplate is helmTemplate that fails the test if helm fails.
func mustHelmTemplate(t *testing.T, namespace string, args ...string) []*unstructured.Unstructured {
	t.Helper()
	objs, out, err := helmTemplate(t, namespace, args...)
	if err != nil {
		t.Fatalf("helm template %v: %v\n%s", args, err, out)
	}
	return objs
}

// The chart's binding selects the release namespace (helm does not own the Namespace, so it
// selects it by name).
func TestTheChartGuardsItsReleaseNamespace(t *testing.T) {
	objs := mustHelmTemplate(t, "other")
	if !bindingSelects(t, objs, labels.Set{"kubernetes.io/metadata.name": "other"}) || bindingSelects(t, objs, labels.Set{"kubernetes.io/metadata.name": "metacel-system"}) {
		t.Errorf("the chart installed in other: the binding metacel-policy-authors does not select other alone")
	}
}

// The upgrade command of docs/operating.md (`upgrade.sh`) runs helm as the caller's Kubernetes
// user with every group the API server gives them, plus metacel:policy-authors: impersonation
// replaces the caller's groups, and an upgrade with the group alone (or as $USER, the Unix login)
// loses the rights that let the caller upgrade. It runs with a kubectl that answers `auth whoami`
// as the API server would and a helm that prints its arguments.
func TestTheDocumentedUpgradeImpersonatesTheCallerWithTheirGroups(t *testing.T) {
	text, err := os.ReadFile(filepath.Join(root, "docs", "operating.md"))
	if err != nil {
		t.Fatal(err)
	}
	blocks, err := mdblocks.Parse(string(text))
	if err != nil {
		t.Fatal(err)
	}
	block, err := mdblocks.Named(blocks, "upgrade.sh")
	if err != nil {
		t.Fatalf("docs/operating.md: %v", err)
	}
	bin := t.TempDir()
	fakes := map[string]string{
		// the jsonpath of the username, or of the groups one a line
		"kubectl": `case "$*" in
auth\ whoami*username*) printf 'alice@example.com' ;;
auth\ whoami*groups*) printf 'system:masters\nplatform team\nsystem:authenticated\n' ;;
*) echo "unexpected kubectl $*" >&2; exit 1 ;;
esac`,
		"helm": `for a in "$@"; do printf '%s\n' "$a"; done`,
	}
	for name, script := range fakes {
		if err := os.WriteFile(filepath.Join(bin, name), []byte("#!/usr/bin/env bash\n"+script+"\n"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	cmd := exec.CommandContext(t.Context(), "bash", "-euo", "pipefail", "-c", block.Text)
	cmd.Env = append(os.Environ(), "PATH="+bin+string(os.PathListSeparator)+os.Getenv("PATH"), "USER=unix-login")
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("the block failed: %v\n%s", err, out)
	}
	args := strings.Split(strings.TrimSuffix(string(out), "\n"), "\n")
	var user string
	var groups []string
	for i := 0; i+1 < len(args); i++ {
		switch args[i] {
		case "--kube-as-user":
			user = args[i+1]
		case "--kube-as-group":
			groups = append(groups, args[i+1])
		}
	}
	if len(args) < 2 || args[0] != "upgrade" {
		t.Errorf("not a helm upgrade: %q", args)
	}
	if user != "alice@example.com" {
		t.Errorf("helm impersonates the user %q, want the caller's Kubernetes user alice@example.com", user)
	}
	want := []string{"system:masters", "platform team", "system:authenticated", "metacel:policy-authors"}
	if !slices.Equal(groups, want) {
		t.Errorf("helm impersonates the groups %q, want the caller's and the policy authors' %q", groups, want)
	}
}

// rbacRule is a rule of a Role.
type rbacRule struct {
	APIGroups     []string `json:"apiGroups"`
	Resources     []string `json:"resources"`
	Verbs         []string `json:"verbs"`
	ResourceNames []string `json:"resourceNames"`
}

// allows reports whether a rule lets verb act on the core resource of this name ("" for a
// request that names none: a list or watch without a metadata.name field selector, a create).
func (r rbacRule) allows(verb, resource, name string) bool {
	in := func(list []string, v string) bool { return slices.Contains(list, v) || slices.Contains(list, "*") }
	return in(r.APIGroups, "") && in(r.Resources, resource) && in(r.Verbs, verb) &&
		(len(r.ResourceNames) == 0 || name != "" && slices.Contains(r.ResourceNames, name))
}

// roleRules reads the rules of the Role metacel in objs.
func roleRules(t *testing.T, objs []*unstructured.Unstructured) []rbacRule {
	t.Helper()
	data, err := json.Marshal(find(t, objs, "Role", "metacel").Object["rules"])
	if err != nil {
		t.Fatal(err)
	}
	var rules []rbacRule
	if err := json.Unmarshal(data, &rules); err != nil {
		t.Fatal(err)
	}
	return rules
}

// The runtime's Role lets it read and update its own Secret, metacel-webhook-tls (by name, or
// listed and watched with a metadata.name field selector, which RBAC checks as the name), and
// create it; no other Secret of its namespace, such as Helm's release Secrets.
func TestTheRuntimeReadsNoSecretButItsOwn(t *testing.T) {
	renders := map[string][]*unstructured.Unstructured{"deploy/": kustomize(t, map[string]any{})}
	if findHelm() != "" {
		renders["the chart"] = mustHelmTemplate(t, "metacel-system")
	}
	for where, objs := range renders {
		rules := roleRules(t, objs)
		allowed := func(verb, name string) bool {
			return slices.ContainsFunc(rules, func(r rbacRule) bool { return r.allows(verb, "secrets", name) })
		}
		for _, verb := range []string{"get", "list", "watch", "update"} {
			if !allowed(verb, "metacel-webhook-tls") {
				t.Errorf("%s: the runtime may not %s its Secret metacel-webhook-tls", where, verb)
			}
			for _, name := range []string{"", "sh.helm.release.v1.metacel.v1"} {
				if allowed(verb, name) {
					t.Errorf("%s: the runtime may %s the Secrets of its namespace (name %q), not only metacel-webhook-tls", where, verb, name)
				}
			}
		}
		if !allowed("create", "") {
			t.Errorf("%s: the runtime may not create its Secret", where)
		}
		for _, verb := range []string{"patch", "delete", "deletecollection"} {
			if allowed(verb, "metacel-webhook-tls") {
				t.Errorf("%s: the runtime may %s its Secret", where, verb)
			}
		}
	}
}

// deployment returns the Deployment metacel of objs.
func deployment(t *testing.T, objs []*unstructured.Unstructured) *unstructured.Unstructured {
	t.Helper()
	return find(t, objs, "Deployment", "metacel")
}

// Without leader election a rolling update's surge Pod would reconcile beside the old one, both
// writing every child: the chart's Deployment is then Recreate; with it, a rolling update.
func TestTheChartRecreatesARuntimeWithoutLeaderElection(t *testing.T) {
	strategy := func(args ...string) string {
		s, _, _ := unstructured.NestedString(deployment(t, mustHelmTemplate(t, "metacel-system", args...)).Object, "spec", "strategy", "type")
		return s
	}
	if got := strategy("--set", "leaderElection.enabled=false", "--set", "replicas=1"); got != "Recreate" {
		t.Errorf("without leader election: strategy %q, want Recreate", got)
	}
	if got := strategy(); got == "Recreate" {
		t.Errorf("with leader election: strategy %q, want a rolling update", got)
	}
}

// A ServiceMonitor and a PodMonitor both would scrape every Pod twice as job="metacel",
// doubling every sum of the dashboard and the alerts (and masking MetacelShardSlotsUnowned):
// the chart refuses both, and renders either.
func TestTheChartRefusesBothMonitors(t *testing.T) {
	_, out, err := helmTemplate(t, "metacel-system", "--set", "monitoring.serviceMonitor.enabled=true,monitoring.podMonitor.enabled=true")
	if err == nil || !strings.Contains(out, "enable one of them") {
		t.Errorf("both monitors rendered (%v):\n%.300s", err, out)
	}
	for kind, value := range map[string]string{"ServiceMonitor": "serviceMonitor", "PodMonitor": "podMonitor"} {
		find(t, mustHelmTemplate(t, "metacel-system", "--set", "monitoring."+value+".enabled=true"), kind, "metacel")
	}
}

// The chart's Pod values reach the Deployment: nodeSelector, tolerations, affinity,
// imagePullSecrets, podAnnotations and extraArgs (after the chart's own flags).
func TestTheChartRendersThePodValues(t *testing.T) {
	values := filepath.Join(t.TempDir(), "values.yaml")
	if err := os.WriteFile(values, []byte(`
nodeSelector: {kubernetes.io/os: linux}
tolerations: [{key: dedicated, operator: Equal, value: platform, effect: NoSchedule}]
affinity:
  nodeAffinity:
    requiredDuringSchedulingIgnoredDuringExecution:
      nodeSelectorTerms: [{matchExpressions: [{key: pool, operator: In, values: [system]}]}]
imagePullSecrets: [{name: pull}]
podAnnotations: {example.com/team: platform}
extraArgs: [--bookkeeping-patches-per-second=50, -v=2]
`), 0o600); err != nil {
		t.Fatal(err)
	}
	d := deployment(t, mustHelmTemplate(t, "metacel-system", "-f", values)).Object
	for _, c := range []struct {
		path []string
		want any
	}{
		{[]string{"spec", "template", "spec", "nodeSelector"}, map[string]any{"kubernetes.io/os": "linux"}},
		{[]string{"spec", "template", "spec", "tolerations"}, []any{map[string]any{"key": "dedicated", "operator": "Equal", "value": "platform", "effect": "NoSchedule"}}},
		{[]string{"spec", "template", "spec", "affinity", "nodeAffinity", "requiredDuringSchedulingIgnoredDuringExecution", "nodeSelectorTerms"},
			[]any{map[string]any{"matchExpressions": []any{map[string]any{"key": "pool", "operator": "In", "values": []any{"system"}}}}}},
		{[]string{"spec", "template", "spec", "imagePullSecrets"}, []any{map[string]any{"name": "pull"}}},
		{[]string{"spec", "template", "metadata", "annotations"}, map[string]any{"example.com/team": "platform"}},
	} {
		got, _, _ := unstructured.NestedFieldNoCopy(d, c.path...)
		if !reflect.DeepEqual(got, c.want) {
			t.Errorf("%s: got %v, want %v", strings.Join(c.path, "."), got, c.want)
		}
	}
	containers, _, _ := unstructured.NestedSlice(d, "spec", "template", "spec", "containers")
	if len(containers) == 0 {
		t.Fatal("no container")
	}
	args, _, _ := unstructured.NestedStringSlice(containers[0].(map[string]any), "args")
	if n := len(args); n < 2 || args[n-2] != "--bookkeeping-patches-per-second=50" || args[n-1] != "-v=2" {
		t.Errorf("the container's args %q do not end with extraArgs", args)
	}
}

// Values of the wrong type or form are refused when the chart renders, not by the runtime when
// it starts: values.schema.json. A duration without its unit (the runtime exits "missing unit in
// duration") is the usual one.
func TestTheChartRefusesMistypedValues(t *testing.T) {
	for _, set := range []string{
		"leaderElection.leaseDuration=30", "leaderElection.renewDeadline=ten", "replicas=two",
		"nodeSelector=linux", "extraArgs=-v=2", "workers=0",
	} {
		if _, out, err := helmTemplate(t, "metacel-system", "--set", set); err == nil {
			t.Errorf("--set %s rendered", set)
		} else if !strings.Contains(out, "schema") {
			t.Errorf("--set %s: refused, but not by the values' schema: %s", set, out)
		}
	}
	if _, out, err := helmTemplate(t, "metacel-system", "--set-string", "leaderElection.leaseDuration=30"); err == nil {
		t.Errorf("leaderElection.leaseDuration \"30\" (no unit) rendered")
	} else if !strings.Contains(out, "leaseDuration") {
		t.Errorf("leaderElection.leaseDuration \"30\": %s", out)
	}
	mustHelmTemplate(t, "metacel-system", "--set", "leaderElection.leaseDuration=1m30s,leaderElection.renewDeadline=45s,leaderElection.retryPeriod=500ms")
	// values that rendered before the schema: a numeric image tag, a fractional QPS (--set gives it as a string)
	for set, want := range map[string]string{"image.tag=123456789": `:123456789"`, "kubeAPIQPS=50.5": "--kube-api-qps=50.5"} {
		if _, out, err := helmTemplate(t, "metacel-system", "--set", set); err != nil || !strings.Contains(out, want) {
			t.Errorf("--set %s: %v; the output does not hold %s", set, err, want)
		}
	}
}
