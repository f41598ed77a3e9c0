package operator

import (
	"strings"
	"testing"

	"metacel.dev/metacel/runtime/kinds"
	"metacel.dev/metacel/runtime/policy"
	"metacel.dev/metacel/runtime/policystatus"
	"metacel.dev/metacel/runtime/source"
)

// cacheEdit is a version of the policy "cache" whose parentSchema declares color instead of size,
// with a variable of that expression.
func cacheEdit(expression string) string {
	return `apiVersion: metacel.dev/v1alpha1
kind: CompositePolicy
metadata:
  name: cache
spec:
  parentResource: {apiVersion: example.com/v1, resource: caches}
  parentSchema:
    install: true
    kind: Cache
    spec:
      color: string
  variables:
    - name: x
      expression: "` + expression + `"
`
}

// An edit of a policy that installs its parent's CRD, with a changed parentSchema and a CEL
// error, still rewrote the installed CRD: the CRD was installed before the edit compiled, the
// policy said PolicyWaiting instead of the CEL error, and its last good version ran on against a
// CRD from a version that never loaded. Now the edit is compiled first, against the CRD it would
// install: one that does not compile is Invalid with its error and leaves the CRD alone.
func TestAnEditThatFailsToLoadLeavesTheInstalledCRDAlone(t *testing.T) {
	tests := []struct {
		name        string
		edit        string
		wantApplied bool
		wantState   policystatus.State
		wantError   string
	}{
		{"a CEL error: not installed, Invalid with the error", cacheEdit("parent.spec.color +"), false, policystatus.Invalid, "Syntax error"},
		{"an expression on a field the old CRD lacks: compiled against the new CRD, installed", cacheEdit("parent.spec.color"), true, policystatus.Waiting, "installed the CRD"},
		{"an unknown field of the new CRD: not installed", cacheEdit("parent.spec.size"), false, policystatus.Invalid, "size"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			good := cachePolicy("cache")
			s, applied := installSet(t, installedCRD(t, good))
			served := kinds.NewCatalog() // the cluster serves the CRD the good version installed
			docs, err := policy.Parse("cache.yaml", []byte(good))
			if err != nil {
				t.Fatal(err)
			}
			crd, err := policy.ParentCRD(docs[0])
			if err != nil {
				t.Fatal(err)
			}
			served.AddCRD(crd)
			s.mapper = served
			s.snapshots["configmaps"] = []source.Unit{{Name: "cache.yaml", Data: []byte(good)}}
			s.loadUnits(nil)
			if st := s.units["cache.yaml"]; st.failed || st.good == nil {
				t.Fatalf("the good version did not load: %s", st.reported)
			}
			before := len(applied())
			s.snapshots["configmaps"] = []source.Unit{{Name: "cache.yaml", Data: []byte(tc.edit)}}
			s.loadUnits(nil)
			if got := len(applied()) > before; got != tc.wantApplied {
				t.Errorf("the CRD applied: %v, want %v", got, tc.wantApplied)
			}
			got := s.statusOf(s.units["cache.yaml"], "cache", s.ctrls.localCounts()["cache"])
			if got.State != tc.wantState || !strings.Contains(got.LastError, tc.wantError) {
				t.Errorf("state %s (%q), want %s saying %q", got.State, got.LastError, tc.wantState, tc.wantError)
			}
		})
	}
}
