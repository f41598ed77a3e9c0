package a

import "testing"

// huge would be the largest struct, were test files production code.
type huge struct{ a, b, c, d, e, f, g, h int }

func TestNothing(t *testing.T) {
	_ = huge{}
	_ = helper() + limit
	(&Server{}).load()
}
