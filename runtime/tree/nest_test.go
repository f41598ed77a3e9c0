package tree

import (
	"fmt"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	kubefake "k8s.io/client-go/kubernetes/fake"

	"metacel.dev/metacel/runtime/contract"
	"metacel.dev/metacel/runtime/kinds"
	"metacel.dev/metacel/runtime/policy"
)

const group = "nested.test.metacel.dev"

// levelPolicy is a policy whose parent is a kind of group that makes one child named after its
// parent, of childKind (in group, or a ConfigMap when childKind is ""); selector, when not "",
// is its parentResource's labelSelector.
func levelPolicy(name, resource, kind, childResource, childKind, selector string) string {
	childAPI, childTemplate := group+"/v1", "apiVersion: "+group+"/v1\n        kind: "+childKind
	if childKind == "" {
		childAPI, childResource, childTemplate = "v1", "configmaps", "apiVersion: v1\n        kind: ConfigMap"
	}
	if selector != "" {
		selector = ", labelSelector: " + selector
	}
	return fmt.Sprintf(`apiVersion: metacel.dev/v1alpha1
kind: CompositePolicy
metadata: {name: %s}
spec:
  parentResource: {apiVersion: %s/v1, resource: %s%s}
  parentSchema: {kind: %s, spec: {size: integer}}
  childResources: [{apiVersion: %s, resource: %s}]
  children:
    - id: %s
      template:
        %s
        metadata: {name: "${parent.metadata.name}"}
`, name, group, resource, selector, kind, childAPI, childResource, strings.TrimSuffix(childResource, "s"), childTemplate)
}

// object is the object shop/p of kind (in group, or v1 for a ConfigMap), a child of parent by
// policy's labels when policy is not "", and Ready when its status says so.
func object(kind, uid, policy string, parent *unstructured.Unstructured) *unstructured.Unstructured {
	apiVersion := group + "/v1"
	if kind == "ConfigMap" {
		apiVersion = "v1"
	}
	o := &unstructured.Unstructured{Object: map[string]any{"apiVersion": apiVersion, "kind": kind,
		"metadata": map[string]any{"name": "p", "namespace": "shop", "uid": uid}}}
	if policy != "" { // applied by metacel
		o.SetLabels(map[string]string{contract.LabelManagedBy: contract.ManagedByValue, contract.LabelChildPolicyName: policy,
			contract.LabelParentUID: string(parent.GetUID()), contract.LabelChildID: strings.ToLower(kind)})
		o.SetManagedFields([]metav1.ManagedFieldsEntry{{Manager: "metacel", Operation: metav1.ManagedFieldsOperationApply, APIVersion: apiVersion,
			FieldsType: "FieldsV1", FieldsV1: metav1.NewFieldsV1(`{"f:metadata":{}}`)}})
	}
	if kind != "ConfigMap" {
		o.Object["status"] = map[string]any{"conditions": []any{map[string]any{"type": "Ready", "status": "True", "reason": "ChildrenReady"}}}
	}
	return o
}

// shape draws a tree as lines: each child indented under its parent, with its own policy or
// why its tree is not shown.
func shape(t *Tree, indent string) []string {
	var out []string
	if t.Error != "" {
		out = append(out, indent+"error: "+t.Error)
	}
	for _, c := range t.Children {
		line := indent + c.String()
		switch {
		case c.ShownAbove:
			line += " (shown above)"
		case c.Tree != nil:
			line += " (policy " + c.Tree.Policy + ", ready " + fmt.Sprint(c.Tree.Ready) + ")"
		}
		out = append(out, line)
		if c.Tree != nil {
			out = append(out, shape(c.Tree, indent+"  ")...)
		}
	}
	return out
}

func TestAChildThatIsAParentShowsItsOwnTree(t *testing.T) {
	platform := object("Platform", "uid-p", "", nil)
	team := object("Team", "uid-t", "platforms", platform)
	app := object("App", "uid-a", "teams", team)
	config := object("ConfigMap", "uid-c", "apps", app)
	three := []string{
		levelPolicy("platforms", "platforms", "Platform", "teams", "Team", ""),
		levelPolicy("teams", "teams", "Team", "apps", "App", ""),
		levelPolicy("apps", "apps", "App", "", "", ""),
	}
	// a Team whose App makes the Team above it: a cycle of parents
	loopTeam := object("Team", "uid-t", "", nil)
	loopApp := object("App", "uid-a", "teams", loopTeam)
	asChild := object("Team", "uid-t", "apps", loopApp)
	loopTeam.SetLabels(asChild.GetLabels())
	loopTeam.SetManagedFields(asChild.GetManagedFields())
	tests := []struct {
		name     string
		policies []string
		objects  []*unstructured.Unstructured
		top      *unstructured.Unstructured
		depth    int
		want     []string
	}{
		{"depth 0: the parent's children only", three, []*unstructured.Unstructured{platform, team, app, config}, platform, 0, []string{
			"Team shop/p",
		}},
		{"depth 1: a child's own tree", three, []*unstructured.Unstructured{platform, team, app, config}, platform, 1, []string{
			"Team shop/p (policy teams, ready true)",
			"  App shop/p",
		}},
		{"depth 2: two levels down", three, []*unstructured.Unstructured{platform, team, app, config}, platform, 2, []string{
			"Team shop/p (policy teams, ready true)",
			"  App shop/p (policy apps, ready true)",
			"    ConfigMap shop/p",
		}},
		{"deeper than the levels: as deep as they go", three, []*unstructured.Unstructured{platform, team, app, config}, platform, MaxDepth, []string{
			"Team shop/p (policy teams, ready true)",
			"  App shop/p (policy apps, ready true)",
			"    ConfigMap shop/p",
		}},
		{"a child the policy of its kind does not select is no parent", []string{
			levelPolicy("platforms", "platforms", "Platform", "teams", "Team", ""),
			levelPolicy("teams", "teams", "Team", "apps", "App", "{matchLabels: {tier: gold}}"),
		}, []*unstructured.Unstructured{platform, team}, platform, 2, []string{
			"Team shop/p",
		}},
		{"a missing child has no tree", three, []*unstructured.Unstructured{platform}, platform, 2, []string{
			"Team shop/p",
		}},
		{"a cycle of parents is not followed", []string{
			levelPolicy("teams", "teams", "Team", "apps", "App", ""),
			levelPolicy("apps", "apps", "App", "teams", "Team", ""),
		}, []*unstructured.Unstructured{loopTeam, loopApp}, loopTeam, MaxDepth, []string{
			"App shop/p (policy apps, ready true)",
			"  Team shop/p (shown above)",
		}},
		{"a child whose policy does not load says why", []string{
			levelPolicy("platforms", "platforms", "Platform", "teams", "Team", ""),
			strings.Replace(levelPolicy("teams", "teams", "Team", "apps", "App", ""), "${parent.metadata.name}", "${parent.spec.nosuch}", 1),
		}, []*unstructured.Unstructured{platform, team}, platform, 1, []string{
			"Team shop/p (policy teams, ready true)",
			`  error: the running version of policy "teams" (configmap/metacel-system/teams/policy.yaml) does not load now`,
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := clusterOf(t, tt.policies, tt.objects)
			running, err := FindPolicyOf(t.Context(), in.Kube, in.ReservedNamespace, tt.top.GetKind(), in.Mapper)
			if err != nil {
				t.Fatal(err)
			}
			in.Policy, in.Source, in.Parent, in.Depth = running.Policy, running.Source, tt.top, tt.depth
			got, err := Build(t.Context(), in)
			if err != nil {
				t.Fatal(err)
			}
			lines := shape(got, "")
			for i := range lines { // an error's cause is long: its start says it
				for _, w := range tt.want {
					if strings.HasPrefix(lines[i], w) {
						lines[i] = w
					}
				}
			}
			if strings.Join(lines, "\n") != strings.Join(tt.want, "\n") {
				t.Errorf("tree:\n%s\nwant:\n%s", strings.Join(lines, "\n"), strings.Join(tt.want, "\n"))
			}
		})
	}
}

// clusterOf is a cluster that runs the policies (each in its own ConfigMap of metacel-system,
// its parent's CRD installed) and holds the objects.
func clusterOf(t *testing.T, policies []string, objects []*unstructured.Unstructured) Input {
	t.Helper()
	cat := kinds.NewCatalog()
	var configMaps []runtime.Object
	listKinds := map[schema.GroupVersionResource]string{{Version: "v1", Resource: "configmaps"}: "ConfigMapList", {Version: "v1", Resource: "namespaces"}: "NamespaceList"}
	for _, text := range policies {
		docs, err := policy.Parse("policy.yaml", []byte(text))
		if err != nil {
			t.Fatal(err)
		}
		crd, err := policy.ParentCRD(docs[0])
		if err != nil {
			t.Fatal(err)
		}
		cat.AddCRD(crd)
		listKinds[schema.GroupVersionResource{Group: group, Version: "v1", Resource: crd.Spec.Names.Plural}] = crd.Spec.Names.ListKind
		configMaps = append(configMaps, &corev1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{Name: docs[0].Policy.Metadata.Name, Namespace: "metacel-system", Labels: map[string]string{contract.LabelPolicyConfigMap: "true"}},
			Data:       map[string]string{"policy.yaml": text}})
	}
	var objs []runtime.Object
	for _, o := range objects {
		objs = append(objs, o.DeepCopy())
	}
	return Input{Client: dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), listKinds, objs...),
		Kube: kubefake.NewClientset(configMaps...), Mapper: cat, ReservedNamespace: "metacel-system"}
}

// A policy whose children's namespaces must consent (confinement's consentLabel) shows its
// children: the tree reads the Namespaces' labels, as the runtime does. It said every namespace
// had not consented (NamespaceNotAllowed) and showed no child, for the ConfigMapSync seed too.
func TestATreeReadsTheConsentOfNamespaces(t *testing.T) {
	share := strings.Replace(levelPolicy("shares", "shares", "Share", "", "", ""), "    - id: configmap\n",
		"    - id: configmap\n      crossNamespace: true\n", 1)
	share = strings.Replace(share, `metadata: {name: "${parent.metadata.name}"}`, `metadata: {name: "${parent.metadata.name}", namespace: shared}`, 1)
	share = strings.Replace(share, "  children:\n", "  confinement:\n    childNamespaces: {consentLabel: example.com/shares}\n  children:\n", 1)
	parent := object("Share", "uid-s", "", nil)
	shared := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "Namespace",
		"metadata": map[string]any{"name": "shared", "labels": map[string]any{"example.com/shares": "true"}}}}
	in := clusterOf(t, []string{share}, []*unstructured.Unstructured{parent, shared})
	running, err := FindPolicyOf(t.Context(), in.Kube, in.ReservedNamespace, "Share", in.Mapper)
	if err != nil {
		t.Fatal(err)
	}
	in.Policy, in.Source, in.Parent = running.Policy, running.Source, parent
	got, err := Build(t.Context(), in)
	if err != nil {
		t.Fatal(err)
	}
	if got.Error != "" || len(got.Children) != 1 || got.Children[0].Namespace != "shared" {
		t.Errorf("tree: error %q, children %v; want ConfigMap shared/p, no error", got.Error, got.Children)
	}
}

// An object someone else made with a child's labels is no child (the runtime's caches keep only
// what metacel applied): the tree showed it as the parent's ready child, where the runtime
// finds the child missing and its name taken.
func TestAnObjectMetacelDidNotApplyIsNoChild(t *testing.T) {
	apps := levelPolicy("apps", "apps", "App", "", "", "")
	app := object("App", "uid-a", "", nil)
	impostor := object("ConfigMap", "uid-c", "apps", app)
	impostor.SetManagedFields([]metav1.ManagedFieldsEntry{{Manager: "kubectl", Operation: metav1.ManagedFieldsOperationUpdate, APIVersion: "v1",
		FieldsType: "FieldsV1", FieldsV1: metav1.NewFieldsV1(`{"f:metadata":{}}`)}})
	in := clusterOf(t, []string{apps}, []*unstructured.Unstructured{app, impostor})
	running, err := FindPolicyOf(t.Context(), in.Kube, in.ReservedNamespace, "App", in.Mapper)
	if err != nil {
		t.Fatal(err)
	}
	in.Policy, in.Source, in.Parent = running.Policy, running.Source, app
	got, err := Build(t.Context(), in)
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Children) != 1 || got.Children[0].Exists {
		t.Errorf("children %+v, want ConfigMap shop/p missing", got.Children)
	}
}
