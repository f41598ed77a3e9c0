//go:build e2e

package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/yaml"

	"metacel.dev/metacel/runtime/apply"
	"metacel.dev/metacel/runtime/decide/noop"
	"metacel.dev/metacel/runtime/kinds"
	"metacel.dev/metacel/runtime/operator"
	"metacel.dev/metacel/runtime/policy"
	"metacel.dev/metacel/runtime/render"
	"metacel.dev/metacel/test/testpolicies"
)

// secretPolicy is a policy whose child is a Secret written with stringData, updated by method,
// for the Widgets labelled for ns only; it acts as a ServiceAccount of its name, as users deploy
// policies (its writes impersonate it, its reads are checked).
const secretPolicy = `apiVersion: metacel.dev/v1alpha1
kind: CompositePolicy
metadata:
  name: %[1]s
spec:
  serviceAccountName: %[1]s
  parentResource:
    apiVersion: e2e.metacel.dev/v1
    resource: widgets
    labelSelector: {matchLabels: {e2e.metacel.dev/test: %[2]s}}
  childResources:
    - apiVersion: v1
      resource: secrets
      updateStrategy: {method: %[3]s}
  children:
    - id: secret
      template:
        apiVersion: v1
        kind: Secret
        metadata:
          name: "${parent.metadata.name}-secret"
        stringData:
          color: "${parent.spec.?color.orValue('none')}"
`

// TestASecretWrittenWithStringDataIsUpToDate: the API server stores a Secret's stringData as data
// and never returns it; a converged Secret child written with stringData is up to date, so that
// syncs of its parent write it no more, and, with the Recreate method, do not replace it.
func TestASecretWrittenWithStringDataIsUpToDate(t *testing.T) {
	for _, method := range []policy.UpdateMethod{policy.InPlace, policy.Recreate} {
		t.Run(string(method), func(t *testing.T) {
			ns := newNamespace(t, "stringdata")
			name := "stringdata-" + strings.ToLower(string(method))
			dir := t.TempDir()
			if err := os.WriteFile(filepath.Join(dir, "secret.yaml"), fmt.Appendf(nil, secretPolicy, name, ns, method), 0o644); err != nil {
				t.Fatal(err)
			}
			rt := startRuntimeWith(t, operator.Options{PolicyDirs: []string{dir}})
			w := widget(ns, "w")
			w.SetLabels(map[string]string{"e2e.metacel.dev/test": ns})
			create(t, widgetsGVR, w)
			waitFor(t, secretsGVR, ns, "w-secret", wait, hasData("color", "Ymx1ZQ==")) // base64 of blue
			waitFor(t, widgetsGVR, ns, "w", wait, hasCondition("Synced", "True", "", ""))
			touchAndSync(t, rt, name, ns, "w", 0) // in-flight syncs of the creation settle
			secret, err := get(t, secretsGVR, ns, "w-secret")
			if err != nil {
				t.Fatal(err)
			}
			before := rt.writeCounts()
			for i := 1; i <= 3; i++ {
				touchAndSync(t, rt, name, ns, "w", i)
			}
			secrets := "/api/v1/namespaces/" + ns + "/secrets"
			var writes int64
			for path, n := range rt.writesSince(before) {
				if strings.HasPrefix(path, secrets) {
					writes += n
				}
			}
			t.Logf("%d writes to secrets in 3 syncs of a converged parent", writes)
			if writes != 0 {
				t.Errorf("3 syncs of a converged parent wrote its Secret %d times, want 0: %v", writes, rt.writesSince(before))
			}
			after, err := get(t, secretsGVR, ns, "w-secret")
			if err != nil {
				t.Fatal(err)
			}
			if after.GetUID() != secret.GetUID() {
				t.Errorf("the Secret was recreated (UID %s, then %s)", secret.GetUID(), after.GetUID())
			}
		})
	}
}

// touchAndSync changes an annotation of a Widget, which makes the runtime sync it in full (its
// resourceVersion changes), and waits for that sync.
func touchAndSync(t *testing.T, rt *metacel, policyName, ns, name string, i int) {
	t.Helper()
	syncs := rt.reconciles(policyName)
	patch(t, widgetsGVR, ns, name, fmt.Sprintf(`{"metadata":{"annotations":{"e2e.metacel.dev/touched":"%d"}}}`, i))
	eventually(t, wait, "a sync of the touched parent", func() error {
		if n := rt.reconciles(policyName); n <= syncs {
			return fmt.Errorf("%v syncs", n)
		}
		return nil
	})
}

// storedCase is a case of runtime/render/testdata/stored.yaml: a child as a policy's template
// writes it, and what the API server stores once it is rendered and applied.
type storedCase struct {
	Name     string               `json:"name"`
	Resource policy.ChildResource `json:"resource"`
	Child    map[string]any       `json:"child"`
	Stored   map[string]any       `json:"stored"`
	Stale    bool                 `json:"stale"`
}

// TestWhatRenderGivesIsUpToDateOnceStored renders the child of each case of
// runtime/render/testdata/stored.yaml, applies it as the runtime does, and checks the API
// server's answer: the rendered child is up to date with it, it holds the stored fields the
// case gives (that the unit test of the same cases compares with), and applying it again is
// accepted.
func TestWhatRenderGivesIsUpToDateOnceStored(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(repo, "runtime", "render", "testdata", "stored.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var cases []storedCase
	if err := yaml.UnmarshalStrict(b, &cases); err != nil {
		t.Fatal(err)
	}
	ns := newNamespace(t, "stored")
	for _, tc := range cases {
		t.Run(tc.Name, func(t *testing.T) {
			child := renderOneChild(t, ns, tc)
			gv, err := schema.ParseGroupVersion(tc.Resource.APIVersion)
			if err != nil {
				t.Fatal(err)
			}
			var answer *unstructured.Unstructured
			// a Pod waits for its namespace's default ServiceAccount
			eventually(t, wait, "the API server accepts the child", func() error {
				answer, err = cluster.dynamic.Resource(gv.WithResource(tc.Resource.Resource)).Namespace(ns).
					Apply(t.Context(), child.GetName(), child, metav1.ApplyOptions{FieldManager: apply.FieldManager, Force: true})
				return err
			})
			if noop.SchemaFor(child.GroupVersionKind(), nil).NeedsApply(child, answer) {
				t.Errorf("the rendered child is not up to date with what the API server stored:\nrendered %v\nstored   %v", child.Object, answer.Object)
			}
			if _, err := cluster.dynamic.Resource(gv.WithResource(tc.Resource.Resource)).Namespace(ns).
				Apply(t.Context(), child.GetName(), child, metav1.ApplyOptions{FieldManager: apply.FieldManager, Force: true}); err != nil {
				t.Errorf("the rendered child, applied a second time, is refused: %v", err)
			}
			unmanaged := answer.DeepCopy()
			unmanaged.SetManagedFields(nil)
			want := &unstructured.Unstructured{Object: runtime.DeepCopyJSON(tc.Stored)}
			want.SetAPIVersion(child.GetAPIVersion())
			want.SetKind(child.GetKind())
			if noop.SchemaFor(want.GroupVersionKind(), nil).NeedsApply(want, unmanaged) {
				t.Errorf("the API server stored otherwise than the case says:\ncase   %v\nstored %v", tc.Stored, answer.Object)
			}
		})
	}
}

// renderOneChild renders a case's child for a MyApp of ns (never created: the child's
// ownerReference names a parent that does not exist, and the garbage collector removes the child
// later).
func renderOneChild(t *testing.T, ns string, tc storedCase) *unstructured.Unstructured {
	t.Helper()
	template, err := json.Marshal(tc.Child)
	if err != nil {
		t.Fatal(err)
	}
	text := testpolicies.YAML("onechild", testpolicies.Fills{"APIVERSION": tc.Resource.APIVersion, "RESOURCE": tc.Resource.Resource, "TEMPLATE": string(template)})
	cs, err := policy.Load("stored.yaml", []byte(text), kinds.NewCatalog())
	if err != nil {
		t.Fatal(err)
	}
	parent := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "demo.rtfm.co.ua/v1", "kind": "MyApp",
		"metadata": map[string]any{"name": "app", "namespace": ns, "uid": "00000000-0000-0000-0000-000000000001", "generation": int64(1)},
	}}
	out, err := render.Render(t.Context(), cs[0], render.Input{Parent: parent, Mapper: kinds.NewCatalog()})
	if err != nil {
		t.Fatal(err)
	}
	return out.Children[0].Object
}

// TestAChangedServiceAccountReachesThePodTemplate: a pod template's deprecated serviceAccount,
// changed, changes the service account of the stored template. Sent alone, it would not: the API
// server would keep the stored serviceAccountName, which wins over it, and the child would be
// applied at every sync for nothing.
func TestAChangedServiceAccountReachesThePodTemplate(t *testing.T) {
	ns := newNamespace(t, "serviceaccount")
	deployment := func(account string) storedCase {
		return storedCase{
			Resource: policy.ChildResource{APIVersion: "apps/v1", Resource: "deployments"},
			Child: map[string]any{
				"apiVersion": "apps/v1", "kind": "Deployment", "metadata": map[string]any{"name": "d"},
				"spec": map[string]any{
					"selector": map[string]any{"matchLabels": map[string]any{"app": "d"}},
					"template": map[string]any{
						"metadata": map[string]any{"labels": map[string]any{"app": "d"}},
						"spec": map[string]any{
							"serviceAccount": account,
							"containers":     []any{map[string]any{"name": "c", "image": "nginx"}},
						},
					},
				},
			},
		}
	}
	deployments := cluster.dynamic.Resource(deploymentsGVR).Namespace(ns)
	for _, account := range []string{"first", "second"} {
		child := renderOneChild(t, ns, deployment(account))
		stored, err := deployments.Apply(t.Context(), "d", child, metav1.ApplyOptions{FieldManager: apply.FieldManager, Force: true})
		if err != nil {
			t.Fatal(err)
		}
		if got := str(stored, "spec", "template", "spec", "serviceAccountName"); got != account {
			t.Errorf("serviceAccount %s applied: the stored template's serviceAccountName is %q", account, got)
		}
		if noop.SchemaFor(child.GroupVersionKind(), nil).NeedsApply(child, stored) {
			t.Errorf("serviceAccount %s applied: the child is not up to date", account)
		}
	}
}
