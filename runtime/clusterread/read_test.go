package clusterread

import (
	"slices"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic/fake"

	"metacel.dev/metacel/runtime/contract"
)

// TestListChildrenFindsAChildWhicheverKeyNamesItsPolicy lists, as plan and tree do, the children
// that earlier (the legacy key alone), this (both) and later (the new key alone) runtimes
// labelled: each is its policy's child once, by the new key when the two disagree.
func TestListChildrenFindsAChildWhicheverKeyNamesItsPolicy(t *testing.T) {
	child := func(name, parentUID string, labels map[string]string) runtime.Object {
		obj := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "ConfigMap"}}
		obj.SetName(name)
		obj.SetNamespace("ns")
		labels[contract.LabelParentUID] = parentUID
		obj.SetLabels(labels)
		return obj
	}
	both := func(p string) map[string]string {
		return map[string]string{contract.LabelChildPolicyName: p, contract.LabelChildPolicyLegacy: p}
	}
	client := fake.NewSimpleDynamicClient(runtime.NewScheme(),
		child("earlier", "p-1", map[string]string{contract.LabelChildPolicyLegacy: "web"}),
		child("now", "p-1", both("web")),
		child("later", "p-1", map[string]string{contract.LabelChildPolicyName: "web"}),
		child("disagreeing", "p-1", map[string]string{contract.LabelChildPolicyName: "api", contract.LabelChildPolicyLegacy: "web"}),
		child("other-policy", "p-1", both("api")),
		child("other-parent", "p-2", both("web")),
	)
	for _, tc := range []struct {
		name, policy, parentUID string
		want                    []string
	}{
		{"a policy's children", "web", "", []string{"earlier", "later", "now", "other-parent"}},
		{"a parent's children of a policy", "web", "p-1", []string{"earlier", "later", "now"}},
		{"the children the new key gives another policy", "api", "", []string{"disagreeing", "other-policy"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			objs, err := ListChildren(t.Context(), client, schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}, tc.policy, types.UID(tc.parentUID))
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, obj := range objs {
				got = append(got, obj.GetName())
			}
			slices.Sort(got)
			if !slices.Equal(got, tc.want) {
				t.Errorf("children %q, want %q", got, tc.want)
			}
		})
	}
}
