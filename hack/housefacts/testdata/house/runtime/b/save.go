package b

// Save puts and counts: open, then Put (the order of the names in the source, not of the calls'
// nesting), then Len.
func Save(s *Store) {
	open(s).Put(0)
	_ = s.Len()
}

func open(s *Store) *Store { return s }
