// Package a is the fixture's package whose file arrows and walk the test counts.
package a

import "example.com/house/runtime/b"

// Server has three fields.
type Server struct {
	store  *b.Store
	getter Getter
	onSync func()
}

// Sync is where the walk starts.
func (s *Server) Sync() {
	s.load()
	s.getter.Get() // through an interface: not followed
	s.onSync()     // a function value: not followed
	b.Save(s.store)
	_ = b.Map([]int{1}, double) // double is passed, not called
	helper()                    // entered already, by load
}

func double(i int) int { return 2 * i }
