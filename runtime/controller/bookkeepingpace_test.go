package controller

import (
	"testing"
	"time"
)

// The pace of bookkeeping patches: a burst at once, then perSecond a second; a parent that must
// wait holds its place (its next sync at the time it was given writes, whatever others asked
// meanwhile), and asking again before then does not take a second place.
func TestBookkeepingPaceBoundsPatchesAndKeepsEachParentsTurn(t *testing.T) {
	start := time.Date(2026, 11, 28, 0, 0, 0, 0, time.UTC)
	p := NewBookkeepingPace(10, 10)
	admitted := 0
	for i := range 10 {
		if ok, _ := p.admit(string(rune('a'+i)), 1, start); ok {
			admitted++
		}
	}
	if admitted != 10 {
		t.Fatalf("a burst of 10 admitted %d, want 10", admitted)
	}
	ok, wait := p.admit("late", 1, start)
	if ok || wait <= 0 || wait > 100*time.Millisecond {
		t.Fatalf("the 11th patch: admitted %v, wait %v; want to wait a tenth of a second at most", ok, wait)
	}
	if ok, again := p.admit("late", 1, start.Add(wait/2)); ok || again != wait/2 {
		t.Errorf("asked again halfway: admitted %v, wait %v; want the rest of its wait, %v", ok, again, wait/2)
	}
	if ok, w := p.admit("other", 1, start.Add(wait)); ok {
		t.Errorf("another parent took the late parent's token (wait %v)", w)
	}
	if ok, _ := p.admit("late", 1, start.Add(wait)); !ok {
		t.Errorf("the late parent at its time was not admitted")
	}
	if ok, _ := (*BookkeepingPace)(nil).admit("any", 5, start); !ok {
		t.Errorf("no pace: not admitted")
	}
	if ok, _ := p.admit("none", 0, start); !ok {
		t.Errorf("a sync with no patch: not admitted")
	}
}
