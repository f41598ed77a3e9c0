package tree

import (
	"strings"
	"testing"
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
