package tree

import (
	"strings"
	"testing"
)

func TestAChildSaysWhyItIsNotReady(t *testing.T) {
	pod := Object{Kind: "Pod", Namespace: "ns", Name: "p"}
	tests := []struct {
		name      string
		child     Child
		readyWhen string
		errors    []string
		want      string
	}{
		{"ready", Child{Object: pod, Exists: true, Ready: true}, "x", nil, ""},
		{"missing", Child{Object: pod}, "x", nil, "missing"},
		{"being deleted", Child{Object: pod, Exists: true, Deleting: true}, "x", nil, "being deleted"},
		{"its readyWhen false", Child{Object: pod, Exists: true}, "child.?status.?phase.orValue('') == 'Running'", nil,
			`readyWhen "child.?status.?phase.orValue('') == 'Running'" is not true yet`},
		{"its readyWhen failed", Child{Object: pod, Exists: true}, "x", []string{"readyWhen failed for Pod ns/p: no such key: status"},
			"readyWhen failed for Pod ns/p: no such key: status"},
		{"no readyWhen", Child{Object: pod, Exists: true}, "", nil, "not ready"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := notReadyBecause(tt.child, tt.readyWhen, tt.errors); got != tt.want {
				t.Errorf("notReadyBecause = %q, want %q", got, tt.want)
			}
		})
	}
}

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
