package controller

import "time"

// A parent's child events are spaced that a parent's child events cause while the parent's syncs keep
// writing: the events of a sync's own writes are echoes, and a child that another writer changes
// after each of metacel's writes must not make a hot loop. The spacing grows per sync that wrote,
// not per event (a Pod's scheduling and status updates are many events, and each doubled it: a
// deleted child waited up to a minute to be created again); a sync that writes nothing settles
// it. A child's deletion is never spaced (childHandler): a missing child is news, and the
// deletion a Recreate waits for. What it counts is parentState.writingSyncs.

// Spacing of a parent's child events: echoBase after its first sync that wrote, doubling with
// each further one, up to echoMax.
const (
	echoBase = 5 * time.Millisecond
	echoMax  = time.Minute
)

// wroteChildren records that a sync of the parent wrote children.
func (s *parentStates) wroteChildren(key string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.stateLocked(key).writingSyncs++
}

// settleChildEvents forgets the parent's writing syncs: the next child event is news, not an echo.
func (s *parentStates) settleChildEvents(key string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if p := s.byKey[key]; p != nil {
		p.writingSyncs = 0
	}
}

// childEventDelay is how long a child event of the parent waits before it syncs the parent.
func (s *parentStates) childEventDelay(key string) time.Duration {
	s.mu.Lock()
	var n int
	if p := s.byKey[key]; p != nil {
		n = p.writingSyncs
	}
	s.mu.Unlock()
	if n == 0 {
		return 0
	}
	return min(echoBase<<min(n-1, 20), echoMax) // 5 ms << 20 is past echoMax already
}
