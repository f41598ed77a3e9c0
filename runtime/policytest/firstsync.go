package policytest

import (
	"context"
	"reflect"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// FirstSync is the first sync of a test that starts from the parent and its related objects
// alone: no observed children, no edit in the step. A test against a cluster can create the same
// objects, let the runtime sync the parent, and compare the status it writes first with Expect
// (StatusDiff): offline and cluster must agree.
type FirstSync struct {
	// Name is the test's name (file/test).
	Name    string
	Parent  *unstructured.Unstructured
	Related []*unstructured.Unstructured
	Expect  *Expect
}

// FirstSyncs loads a test file and returns the first syncs of its tests that start from the
// parent and related objects alone and expect a status.
func FirstSyncs(ctx context.Context, path string) ([]FirstSync, error) {
	f, err := load(path)
	if err != nil {
		return nil, err
	}
	e, err := newEnv(f)
	if err != nil {
		return nil, err
	}
	var out []FirstSync
	for _, t := range f.Tests {
		if len(t.Observed.Items) > 0 || len(t.Steps) == 0 || !startsUnedited(t.Steps[0]) {
			continue
		}
		w, err := e.initialWorld(ctx, t)
		if err != nil {
			return nil, err
		}
		out = append(out, FirstSync{Name: testName(f, t), Parent: w.parent, Related: w.related, Expect: t.Steps[0].Expect})
	}
	return out, nil
}

// startsUnedited reports whether a step edits nothing and expects a status.
func startsUnedited(s *Step) bool {
	return s.ParentPatch == nil && len(s.Related.Items) == 0 && len(s.Observed.Items) == 0 &&
		s.Expect != nil && s.Expect.Has["status"]
}

// StatusDiff compares a parent's status with what the expectation says of it, as `metacel test`
// compares it: a unified diff, "" when they agree.
func (e *Expect) StatusDiff(status map[string]any) string {
	want, have := normalize(e.Status), normalize(status)
	if e.Match == MatchSubset {
		have = projectSubset(want, have, false)
	}
	if reflect.DeepEqual(want, have) {
		return ""
	}
	return unifiedDiff(want, have)
}
