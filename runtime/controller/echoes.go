package controller

import (
	"sync"
	"time"
)

// echoes spaces the syncs that a parent's child events cause while the parent's syncs keep
// writing: the events of a sync's own writes are echoes, and a child that another writer changes
// after each of metacel's writes must not make a hot loop. The spacing grows per sync that wrote,
// not per event (a Pod's scheduling and status updates are many events, and each doubled it: a
// deleted child waited up to a minute to be created again); a sync that writes nothing settles
// it. A child's deletion is never spaced (childHandler): a missing child is news, and the
// deletion a Recreate waits for.
type echoes struct {
	mu sync.Mutex
	// writing counts, by parent key, the syncs in a row that wrote children
	writing map[string]int
}

// Spacing of a parent's child events: echoBase after its first sync that wrote, doubling with
// each further one, up to echoMax.
const (
	echoBase = 5 * time.Millisecond
	echoMax  = time.Minute
)

// wrote records that a sync of the parent wrote children.
func (e *echoes) wrote(key string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.writing == nil {
		e.writing = map[string]int{}
	}
	e.writing[key]++
}

// settle forgets the parent's writing syncs: the next child event is news, not an echo.
func (e *echoes) settle(key string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	delete(e.writing, key)
}

// delay is how long a child event of the parent waits before it syncs the parent.
func (e *echoes) delay(key string) time.Duration {
	e.mu.Lock()
	n := e.writing[key]
	e.mu.Unlock()
	if n == 0 {
		return 0
	}
	return min(echoBase<<min(n-1, 20), echoMax) // 5 ms << 20 is past echoMax already
}
