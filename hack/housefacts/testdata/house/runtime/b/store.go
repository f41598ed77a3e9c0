// Package b is the fixture's second package.
package b

// Store has four fields and three methods: the largest struct.
type Store struct {
	items []int
	count int
	name  string
	owner string
}

// Twin has as many fields as Store but no method.
type Twin struct{ a, b, c, d int }

// Put adds one item.
func (s *Store) Put(i int) {
	s.items = append(s.items, i)
	s.grow()
}

func (s *Store) grow() { s.count++ }

// Len counts the items.
func (s Store) Len() int { return len(s.items) }
