package operator

import (
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	"k8s.io/utils/clock"

	"metacel.dev/metacel/runtime/apply"
	"metacel.dev/metacel/runtime/controller"
	"metacel.dev/metacel/runtime/informers"
	"metacel.dev/metacel/runtime/kinds"
	"metacel.dev/metacel/runtime/source"
)

// The informer of a changed unit's parents starts before it compiles, so that it lists while its
// expressions compile: when the loader looks the unit's resources up, it is started. The
// children's informers wait for the compile, which says what they keep of each child. Resources
// the cluster does not serve start none, and none outlives the controllers.
func TestTheParentInformerOfAChangedUnitStartsBeforeItCompiles(t *testing.T) {
	withChild := policyText("a", "namespaces") + "  childResources:\n    - {apiVersion: v1, resource: configmaps}\n"
	selected := policyText("b", "namespaces") + "    labelSelector: {matchLabels: {team: a}}\n  childResources:\n    - {apiVersion: v1, resource: configmaps}\n"
	unknown := policyText("c", "widgets")
	inConfigMap := "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: p}\ndata:\n  a.yaml: |\n" + indent(withChild)
	tests := []struct {
		name string
		unit string
		want int // the informers started when it compiles
	}{
		{"a new unit: its parent resource", withChild, 1},
		{"in a ConfigMap: the same", inConfigMap, 1},
		{"parents selected by label: none (the parents' informer has a selector)", selected, 0},
		{"a resource the cluster does not serve: none", unknown, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			client := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), map[schema.GroupVersionResource]string{
				{Version: "v1", Resource: "namespaces"}: "NamespaceList", {Version: "v1", Resource: "configmaps"}: "ConfigMapList",
			})
			pool := informers.NewPool(t.Context(), client, nil)
			mapper := &lookups{Mapper: kinds.NewCatalog(), pool: pool}
			reg := prometheus.NewRegistry()
			deps := controller.Deps{
				Mapper: mapper, Pool: pool, Metrics: controller.NewMetrics(reg), Clock: clock.RealClock{}, Writer: apply.NewWriter(client),
			}
			s := newPolicySet(t.Context(), deps, func() {}, 1, nil, reg)
			s.update(source.Snapshot{Source: "dir", Units: []source.Unit{{Name: "p.yaml", Data: []byte(tc.unit)}}}, 1)
			if got := mapper.mostStarted(); got != tc.want {
				t.Errorf("%d informers started when the unit compiled, want %d", got, tc.want)
			}
			s.ctrls.stopAll()
			eventually(t, 10*time.Second, "the informers to stop with the controllers", func() error {
				if got := pool.Len(); got != 0 {
					return fmt.Errorf("%d informers left once the controllers stopped", got)
				}
				return nil
			})
		})
	}
}

// lookups is a Mapper that notes how many informers the pool has each time a resource is looked
// up: the policy set looks up a changed unit's resources to warm their informers, then the
// loader looks them up again to compile the unit.
type lookups struct {
	kinds.Mapper
	pool *informers.Pool

	mu   sync.Mutex
	most int
}

func (l *lookups) ForResource(gvr schema.GroupVersionResource) (kinds.Info, bool) {
	n := l.pool.Len()
	l.mu.Lock()
	l.most = max(l.most, n)
	l.mu.Unlock()
	return l.Mapper.ForResource(gvr)
}

func (l *lookups) mostStarted() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.most
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
