package preview

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"metacel.dev/metacel/runtime/decide"
	"metacel.dev/metacel/runtime/kinds"
	"metacel.dev/metacel/runtime/policy"
)

// chainPolicy makes ConfigMap b from the name of ConfigMap a, which it waits for.
const chainPolicy = `apiVersion: metacel.dev/v1alpha1
kind: CompositePolicy
metadata: {name: chain}
spec:
  parentResource: {apiVersion: v1, resource: configmaps, labelSelector: {matchLabels: {chain: "yes"}}}
  childResources:
    - {apiVersion: v1, resource: configmaps}
  children:
    - id: a
      template: {apiVersion: v1, kind: ConfigMap, metadata: {name: "${parent.metadata.name}-a"}}
    - id: b
      template: {apiVersion: v1, kind: ConfigMap, metadata: {name: "${parent.metadata.name}-b"}, data: {from: "${children.a.metadata.name}"}}
`

// A child that reads another is written in the same sync as the one it reads: the runtime's sync
// renders again after the first wave of writes (decide.RenderAgain). The offline sync rendered
// once: render showed b waiting and Ready False, which the cluster never shows, and a test needed
// a step the runtime does not take.
func TestAPreviewWritesInWavesAsTheRuntimesSync(t *testing.T) {
	cat := kinds.NewCatalog()
	cs, err := policy.Load("p.yaml", []byte(chainPolicy), cat)
	if err != nil {
		t.Fatal(err)
	}
	parent := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "ConfigMap",
		"metadata": map[string]any{"name": "p", "namespace": "ns", "labels": map[string]any{"chain": "yes"}}}}
	res, err := Run(t.Context(), Input{Policy: cs[0], Parent: parent, Mapper: cat})
	if err != nil {
		t.Fatal(err)
	}
	var created []string
	for _, s := range res.Steps {
		if s.Action == decide.Create {
			created = append(created, s.Child.Object.GetName())
		}
	}
	if len(created) != 2 || created[0] != "p-a" || created[1] != "p-b" {
		t.Errorf("created %v, want [p-a p-b]: both in one sync", created)
	}
	if len(res.Output.Held) != 0 {
		t.Errorf("held %v after the sync, want none", res.Output.Held)
	}
	if from, _, _ := unstructured.NestedString(res.Output.Children[len(res.Output.Children)-1].Object.Object, "data", "from"); from != "p-a" {
		t.Errorf("b reads %q, want p-a", from)
	}
	conds, _, _ := unstructured.NestedSlice(res.Parent.Object, "status", "conditions")
	for _, c := range conds {
		if m := c.(map[string]any); m["type"] == "Ready" && m["status"] != "True" {
			t.Errorf("Ready %v: %v, want True: both children exist", m["status"], m["message"])
		}
	}
}

// stoppingPolicy is chainPolicy with a first child, x, whose step may stop the sync's waves.
var stoppingPolicy = strings.Replace(chainPolicy, "  children:\n", `  children:
    - id: x
      template: {apiVersion: v1, kind: ConfigMap, metadata: {name: "${parent.metadata.name}-x"}}
`, 1)

// A wave with a step that fails (a conflict: another parent's object holds x's name) or waits
// (x being deleted, created anew once it is gone) ends the runtime's sync: the offline sync
// went on, created b, and listed the conflict once per wave.
func TestAPreviewStopsItsWavesWhereTheRuntimeDoes(t *testing.T) {
	x := func(meta map[string]any) *unstructured.Unstructured {
		meta["name"], meta["namespace"] = "p-x", "ns"
		return &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta}}
	}
	tests := []struct {
		name     string
		observed *unstructured.Unstructured
		want     []string
	}{
		{"another parent's object holds x's name", x(map[string]any{"uid": "fx",
			"labels": map[string]any{"metacel.dev/parent-uid": "other", "metacel.dev/child-id": "x", "metacel.dev/policy-name": "chain"}}),
			[]string{"conflict p-x", "create p-a"}},
		{"x is being deleted", x(map[string]any{"uid": "xu", "deletionTimestamp": "2026-01-01T00:00:00Z", "finalizers": []any{"f"},
			"labels":          map[string]any{"metacel.dev/parent-uid": "pu", "metacel.dev/child-id": "x", "metacel.dev/policy-name": "chain"},
			"ownerReferences": []any{map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "name": "p", "uid": "pu", "controller": true}}}),
			[]string{"await p-x", "create p-a"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cat := kinds.NewCatalog()
			cs, err := policy.Load("p.yaml", []byte(stoppingPolicy), cat)
			if err != nil {
				t.Fatal(err)
			}
			parent := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "ConfigMap",
				"metadata": map[string]any{"name": "p", "namespace": "ns", "uid": "pu", "labels": map[string]any{"chain": "yes"}}}}
			res, err := Run(t.Context(), Input{Policy: cs[0], Parent: parent, Mapper: cat, Observed: []*unstructured.Unstructured{tc.observed}})
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, s := range res.Steps {
				got = append(got, fmt.Sprintf("%v %s", s.Action, s.Child.Object.GetName()))
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("steps %q, want %q", got, tc.want)
			}
		})
	}
}
