package operator

import (
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	dynamicfake "k8s.io/client-go/dynamic/fake"

	"metacel.dev/metacel/runtime/controller"
	"metacel.dev/metacel/runtime/informers"
	"metacel.dev/metacel/runtime/kinds"
	"metacel.dev/metacel/runtime/source"
)

// The informers of a changed unit's resources start before it compiles, so that they list while
// its expressions compile; unchanged units and unknown resources start none.
func TestTheInformersOfAChangedUnitStartBeforeItCompiles(t *testing.T) {
	withChild := policyText("a", "namespaces") + "  childResources:\n    - {apiVersion: v1, resource: configmaps}\n"
	selected := policyText("b", "namespaces") + "    labelSelector: {matchLabels: {team: a}}\n  childResources:\n    - {apiVersion: v1, resource: configmaps}\n"
	unknown := policyText("c", "widgets")
	inConfigMap := "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: p}\ndata:\n  a.yaml: |\n" + indent(withChild)
	tests := []struct {
		name   string
		unit   string
		loaded bool
		want   int
	}{
		{"a new unit: its parent and child resources", withChild, false, 2},
		{"in a ConfigMap: the same", inConfigMap, false, 2},
		{"parents selected by label: the children only (the parents' informer has a selector)", selected, false, 1},
		{"a resource the cluster does not serve: none", unknown, false, 0},
		{"a unit loaded already and unchanged: none", withChild, true, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			client := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), map[schema.GroupVersionResource]string{
				{Version: "v1", Resource: "namespaces"}: "NamespaceList", {Version: "v1", Resource: "configmaps"}: "ConfigMapList",
			})
			pool := informers.NewPool(t.Context(), client, nil)
			s := newPolicySet(t.Context(), controller.Deps{Mapper: kinds.NewCatalog(), Pool: pool}, func() {}, 1, nil, prometheus.NewRegistry())
			unit := source.Unit{Name: "p.yaml", Data: []byte(tc.unit)}
			s.snapshots["dir"] = []source.Unit{unit}
			if tc.loaded {
				s.units[unit.Name] = &unitState{unit: unit, hash: unit.Hash()}
			}
			release := s.warmInformers()
			if got := pool.Len(); got != tc.want {
				t.Errorf("%d informers started, want %d", got, tc.want)
			}
			release()
			if got := pool.Len(); got != 0 {
				t.Errorf("%d informers left after the release", got)
			}
		})
	}
}

func indent(s string) string {
	out := ""
	for _, line := range strings.SplitAfter(s, "\n") {
		if line != "" {
			out += "    " + line
		}
	}
	return out
}
