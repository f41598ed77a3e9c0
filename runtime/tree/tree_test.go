package tree

import (
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"

	"metacel.dev/metacel/runtime/decide"
)

func TestAPolicysParentsAreListedFailingFirst(t *testing.T) {
	ok := Condition{Status: "True"}
	no := Condition{Status: "False"}
	ps := []ParentState{
		{Object: Object{Name: "ready"}, Synced: ok, Ready: ok},
		{Object: Object{Name: "not-ready"}, Synced: ok, Ready: no},
		{Object: Object{Name: "failing"}, Synced: no, Ready: no},
		{Object: Object{Name: "unknown"}},
	}
	var got []string
	for r := range 3 {
		for _, p := range ps {
			if rank(p) == r {
				got = append(got, p.Name)
			}
		}
	}
	if want := "failing,unknown,not-ready,ready"; strings.Join(got, ",") != want {
		t.Errorf("order %s, want %s", strings.Join(got, ","), want)
	}
}

func TestAChildBeingDeletedNamesTheChildrenItHoldsUp(t *testing.T) {
	obj := func(name, deleting string) *unstructured.Unstructured {
		u := &unstructured.Unstructured{}
		u.SetAPIVersion("v1")
		u.SetKind("Secret")
		u.SetNamespace("ns")
		u.SetName(name)
		u.SetUID(types.UID(name))
		if deleting != "" {
			ts := metav1.NewTime(time.Date(2026, 11, 26, 0, 0, 0, 0, time.UTC))
			u.SetDeletionTimestamp(&ts)
		}
		return u
	}
	app, db := obj("app", "x"), obj("db", "")
	tests := []struct {
		name        string
		observed    []*unstructured.Unstructured
		steps       []decide.Step
		wantHoldsUp string
		wantNext    string
	}{
		{"a child being deleted that another waits for", []*unstructured.Unstructured{app, db},
			[]decide.Step{{Action: decide.Wait, Observed: db, Blocker: app}},
			"Secret ns/db", "wait: being deleted since 2026-11-26T00:00:00Z; the deletion of Secret ns/db waits until it is gone"},
		{"a child being deleted that none waits for", []*unstructured.Unstructured{app, db}, nil, "", ""},
		{"a child not being deleted holds up nothing", []*unstructured.Unstructured{obj("app", ""), db},
			[]decide.Step{{Action: decide.Wait, Observed: db, Blocker: obj("app", "")}}, "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			children := make([]Child, len(tt.observed))
			markHoldUps(children, tt.observed, tt.steps)
			if got := strings.Join(children[0].HoldsUp, ","); got != tt.wantHoldsUp {
				t.Errorf("HoldsUp = %q, want %q", got, tt.wantHoldsUp)
			}
			if children[0].Next != tt.wantNext {
				t.Errorf("Next = %q, want %q", children[0].Next, tt.wantNext)
			}
		})
	}
}
