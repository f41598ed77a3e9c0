package operator

import (
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"metacel.dev/metacel/runtime/controller"
	"metacel.dev/metacel/runtime/kinds"
	"metacel.dev/metacel/runtime/source"
)

func policyText(name, resource string) string {
	return `apiVersion: metacel.dev/v1alpha1
kind: CompositePolicy
metadata:
  name: ` + name + `
spec:
  parentResource:
    apiVersion: v1
    resource: ` + resource + `
`
}

func TestConflictingPoliciesTheFirstLoadedWins(t *testing.T) {
	tests := []struct {
		name          string
		first, second string
		want          []string // the policies that run
		rejected      string
	}{
		{"two policies for one parent resource", policyText("a", "namespaces"), policyText("b", "namespaces"), []string{"a"}, "b"},
		{"two policies with one name", policyText("a", "namespaces"), policyText("a", "nodes"), []string{"a"}, "a"},
		{"no conflict", policyText("a", "namespaces"), policyText("b", "nodes"), []string{"a", "b"}, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			reg := prometheus.NewRegistry()
			s := newPolicySet(t.Context(), controller.Deps{Mapper: kinds.NewCatalog()}, func() {}, 1, nil, reg)
			// the second source's unit sorts first by name, but was loaded later
			s.snapshots["dir"] = []source.Unit{{Name: "z-first.yaml", Data: []byte(tc.first)}}
			s.loadUnits(nil)
			s.snapshots["configmaps"] = []source.Unit{{Name: "a-second.yaml", Data: []byte(tc.second)}}
			s.loadUnits(nil)
			desired := s.resolveConflicts()
			var got []string
			for _, d := range sortedDesired(desired) {
				got = append(got, d.policy.Name()+"@"+d.unit.unit.Name)
			}
			var want []string
			for _, n := range tc.want {
				unit := "z-first.yaml"
				if n == "b" {
					unit = "a-second.yaml"
				}
				want = append(want, n+"@"+unit)
			}
			if strings.Join(got, ",") != strings.Join(want, ",") {
				t.Errorf("running %v, want %v", got, want)
			}
			errors := testutil.ToFloat64(s.metrics.loadErrors.WithLabelValues(tc.rejected))
			if tc.rejected != "" && errors != 1 {
				t.Errorf("metacel_policy_load_errors_total{policy=%q} = %v, want 1", tc.rejected, errors)
			}
		})
	}
}

func TestBrokenVersionKeepsTheLastGood(t *testing.T) {
	s := newPolicySet(t.Context(), controller.Deps{Mapper: kinds.NewCatalog()}, func() {}, 1, nil, prometheus.NewRegistry())
	s.snapshots["dir"] = []source.Unit{{Name: "p.yaml", Data: []byte(policyText("a", "namespaces"))}}
	s.loadUnits(nil)
	s.snapshots["dir"] = []source.Unit{{Name: "p.yaml", Data: []byte(policyText("a", "namespaces") + "  bogus: 1\n")}}
	s.loadUnits(nil)
	desired := s.resolveConflicts()
	if _, ok := desired["a"]; !ok || len(desired) != 1 {
		t.Fatalf("the last good version must stay desired, got %v", desired)
	}
	if n := testutil.ToFloat64(s.metrics.loadErrors.WithLabelValues("a")); n != 1 {
		t.Errorf("load errors of a: %v, want 1", n)
	}
	s.snapshots["dir"] = nil
	s.loadUnits(nil)
	if desired := s.resolveConflicts(); len(desired) != 0 {
		t.Errorf("a removed unit's policies must go, got %v", desired)
	}
}
