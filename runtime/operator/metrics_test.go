package operator

import (
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"metacel.dev/metacel/runtime/source"
)

// metacel_policy_same_version_loads_total counted every policy of every snapshot (the minute's
// rescan, each status write on a policy ConfigMap) as a load that found its version running,
// though nothing was loaded. It counts only a policy whose unit's text changed while the policy's
// version did not (a label of its own metadata, another policy of its unit).
func TestOnlyAnEditedUnitCountsASameVersionLoad(t *testing.T) {
	s := handOverSet(t)
	a, b := policyText("a", "namespaces"), policyText("b", "configmaps")
	labelled := strings.Replace(a, "  name: a\n", "  name: a\n  labels: {team: blue}\n", 1)
	steps := []struct {
		name  string
		a     string
		wantA float64
		wantB float64
	}{
		{"first load: started, not a same-version load", a, 0, 0},
		{"the same snapshots again: nothing loaded", a, 0, 0},
		{"a label of a's own metadata: a's unit loaded, its version running", labelled, 1, 0},
		{"the same snapshots again: nothing more", labelled, 1, 0},
	}
	for _, step := range steps {
		t.Run(step.name, func(t *testing.T) {
			for range 3 {
				s.update(source.Snapshot{Source: "dir", Units: []source.Unit{{Name: "a.yaml", Data: []byte(step.a)}, {Name: "b.yaml", Data: []byte(b)}}}, 1)
			}
			for name, want := range map[string]float64{"a": step.wantA, "b": step.wantB} {
				if got := testutil.ToFloat64(s.metrics.sameVersions.WithLabelValues(name)); got != want {
					t.Errorf("metacel_policy_same_version_loads_total{policy=%q} = %v, want %v", name, got, want)
				}
			}
		})
	}
}
