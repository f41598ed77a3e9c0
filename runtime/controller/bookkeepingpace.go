package controller

import (
	"sync"
	"time"

	"golang.org/x/time/rate"
)

// BookkeepingPace bounds the patches of children's bookkeeping (decide.UpdateBookkeeping) that
// all controllers send together. A runtime upgraded to a version that writes another label or
// annotation on children finds every child out of date at once: unpaced, its first syncs would
// send one patch per child in a burst. Paced, a sync whose patches find no token leaves them out,
// and its parent is synced again when a token it reserved is due (the patch is decided again
// then, level-based: nothing is remembered but when the parent may write). Writes of the
// policy's content are not paced: they are what the policy asks for now.
//
// rate.Limiter is the token bucket client-go's flowcontrol wraps; the reservation by parent is
// what flowcontrol lacks: a parent deferred holds its place in the bucket, so that its next sync
// writes, instead of racing the others for the next token.
type BookkeepingPace struct {
	limiter *rate.Limiter
	burst   int
	mu      sync.Mutex
	// due are the parents (policy and key) whose patches hold tokens of the future: when they may
	// write
	due       map[string]time.Time
	lastSweep time.Time
}

// NewBookkeepingPace allows perSecond patches a second, and burst at once.
func NewBookkeepingPace(perSecond float64, burst int) *BookkeepingPace {
	burst = max(burst, 1)
	return &BookkeepingPace{limiter: rate.NewLimiter(rate.Limit(perSecond), burst), burst: burst, due: map[string]time.Time{}}
}

// admit reports whether a parent's sync may send n bookkeeping patches now; when not, how long
// until it may (its tokens are reserved for then). A nil pace admits everything.
func (p *BookkeepingPace) admit(parent string, n int, now time.Time) (bool, time.Duration) {
	if p == nil || n == 0 {
		return true, 0
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if at, ok := p.due[parent]; ok {
		if !now.Before(at) {
			delete(p.due, parent)
			return true, 0
		}
		return false, at.Sub(now)
	}
	delay := p.limiter.ReserveN(now, min(n, p.burst)).DelayFrom(now)
	if delay == 0 {
		return true, 0
	}
	p.sweep(now)
	p.due[parent] = now.Add(delay)
	return false, delay
}

// sweep forgets, at most once a minute, reservations a minute past due: their parents were
// deleted, or their controller stopped, before they synced again.
func (p *BookkeepingPace) sweep(now time.Time) {
	if now.Sub(p.lastSweep) < time.Minute {
		return
	}
	p.lastSweep = now
	for parent, at := range p.due {
		if now.Sub(at) > time.Minute {
			delete(p.due, parent)
		}
	}
}
