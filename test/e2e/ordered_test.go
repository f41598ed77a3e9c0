//go:build e2e

package e2e

import (
	"net/http"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"metacel.dev/metacel/runtime/contract"
	"metacel.dev/metacel/runtime/kinds"
	"metacel.dev/metacel/runtime/policy"
	"metacel.dev/metacel/runtime/render"
	"metacel.dev/metacel/runtime/source"
)

// A Deployment listed first that reads its Secret's name and waits for its StatefulSet (dependsOn)
// is created last, once the StatefulSet's replica is ready on the kwok node: the order of the
// creates the API server received is the order render gives offline for the same parent.
func TestChildrenAreCreatedInTheOrderRenderGives(t *testing.T) {
	dir := filepath.Join("testdata", "policies", "ordered")
	rt := startRuntime(t, dir)
	ns := newNamespace(t, "ordered")
	create(t, widgetsGVR, &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "e2e.metacel.dev/v1", "kind": "Widget",
		"metadata": map[string]any{"name": "w", "namespace": ns},
	}})
	parent := waitFor(t, widgetsGVR, ns, "w", 2*wait, hasCondition("Ready", "True", "ChildrenReady", "3 children ready"))

	var created []string // the resources the runtime created in ns, in order
	for _, r := range rt.sentSoFar() {
		if r.method == http.MethodPost && strings.Contains(r.path, "/namespaces/"+ns+"/") {
			created = append(created, path.Base(r.path))
		}
	}
	offline := renderedOrder(t, dir, parent)
	if !slices.Equal(created, offline) {
		t.Errorf("the runtime created %v, in that order; render's order is %v", created, offline)
	}
	if want := []string{"secrets", "statefulsets", "deployments"}; !slices.Equal(offline, want) {
		t.Errorf("render's order %v, want %v", offline, want)
	}
	web := waitFor(t, deploymentsGVR, ns, "w-web", wait, nil)
	containers, _, _ := unstructured.NestedSlice(web.Object, "spec", "template", "spec", "containers")
	env, _, _ := unstructured.NestedSlice(containers[0].(map[string]any), "env")
	if got, _, _ := unstructured.NestedString(env[0].(map[string]any), "valueFrom", "secretKeyRef", "name"); got != "w-creds" {
		t.Errorf("the Deployment reads Secret %q, want the Secret child w-creds", got)
	}
}

var statefulSetsGVR = schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "statefulsets"}

// renderedOrder is the resources of the children render gives for parent, offline, with the
// children the cluster holds: the order a sync applies them in.
func renderedOrder(t *testing.T, dir string, parent *unstructured.Unstructured) []string {
	t.Helper()
	files, err := source.Files([]string{dir})
	if err != nil {
		t.Fatal(err)
	}
	compiled, err := policy.LoadFiles(files, kinds.NewCatalog())
	if err != nil {
		t.Fatal(err)
	}
	var observed []*unstructured.Unstructured
	selector := contract.LabelParentUID + "=" + string(parent.GetUID())
	for _, gvr := range []schema.GroupVersionResource{secretsGVR, statefulSetsGVR, deploymentsGVR} {
		list, err := cluster.dynamic.Resource(gvr).Namespace(parent.GetNamespace()).List(t.Context(), metav1.ListOptions{LabelSelector: selector})
		if err != nil {
			t.Fatal(err)
		}
		for i := range list.Items {
			observed = append(observed, &list.Items[i])
		}
	}
	out, _, err := render.RenderObserved(t.Context(), compiled[0], render.Input{Parent: parent, Mapper: kinds.NewCatalog()}, observed)
	if err != nil {
		t.Fatal(err)
	}
	var order []string
	for _, c := range out.Children {
		order = append(order, c.Resource.GVR.Resource)
	}
	return order
}
