package operator

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"metacel.dev/metacel/runtime/hashslot"
	"metacel.dev/metacel/runtime/shard"
)

// A replica that leads writes only while its Lease can still be valid by its own clock. The
// elector of client-go notices a lost Lease only when a renewal fails, and it keeps trying for
// RenewDeadline first: a leader that was paused (SIGSTOP, a frozen cgroup, a stalled VM, a long
// GC pause) past its Lease wakes up still leading, with a stale cache and queue, and writes next
// to the standby that has taken over, until that renewal deadline runs out.
//
// The write fence closes that window. It wraps the transport of the leader's clients (every
// client but the elector's own Lease client) and refuses, locally and without sending it, every
// request but GET and HEAD (reads, lists and watches pass) once
//
//	now - (when the last successful acquire or renewal of our Lease record was sent) >= window
//
// measured on the monotonic clock, and on the wall clock too (the larger of the two counts: the
// monotonic clock stops while a machine is suspended, the wall clock does not; a wall clock
// stepped backwards cannot extend the window, a step forwards only closes the fence early). The
// time counted from is taken before the renewal request is sent, never from its response: a
// standby can observe the renewal only after it was sent, so its countdown starts later than
// ours. A standby takes over once it has seen no change of the record for the Lease duration the
// record advertises (whole seconds), so the fence is closed before any standby can acquire.
//
// The window is RenewDeadline (at most 90 % of the advertised Lease duration): the margin before
// a standby may acquire is LeaseDuration - RenewDeadline, 5 s with the defaults (15 s, 10 s).
// client-go already requires RenewDeadline < LeaseDuration for the same reason: the gap is the
// time a leader has to stop acting. A healthy leader renews every RetryPeriod, and RenewDeadline
// must exceed 1.2 RetryPeriod, so the fence closes only after renewals have failed (or been
// unable to run) for about RenewDeadline, when the elector is about to give up anyway. A
// renewal that then succeeds reopens it; a release of the Lease, or a read of the Lease naming
// another holder, closes it at once.
//
// The guarantee, exactly: once the window has closed, no write is handed to the transport, and
// the transport gets no more bytes of the body of a write handed to it before: the body is
// checked at each read, so a write delayed between the first check and the wire (a freeze, a
// dial, a retry on a new connection) fails before the API server has its whole body, and the
// API server acts on no partial body. (Writes without a body have the first check only; the
// clients send a body with every write, DeleteOptions for a delete.) The exception is a freeze
// in the few instructions between a check and the system call that sends what it let through:
// those bytes leave when the process resumes, and no fence in the process can do better. What
// was sent before the window closed cannot be recalled: it reaches the API server whenever the
// network delivers it. The margin (LeaseDuration - RenewDeadline) is for such a write to arrive
// and commit before a standby may acquire; an API server that holds a request longer than that
// can still apply it after the hand-over (Kubernetes has no fencing token to stop it).
//
// A refused write fails with *fencedError: an API status error, 503 ServiceUnavailable with
// reason WriteFenced and a retry delay of a second, retryable, recognisable with
// apierrors.ReasonForError through any wrapping. The replica is about to
// stop leading (runElected then ends with errLostLease), or renews and writes again.
//
// With sharding (sharding.go) the fence is the replica's: its shard Lease's renewals open it, and
// a write made for a parent (its context carries the parent's slot, hashslot.WithSlot) passes only
// while the replica holds that slot (shard.Coordinator.Allows), checked at the same two points.
type writeFence struct {
	clock  clock.PassiveClock
	window time.Duration
	lease  string // namespace/name, for messages
	logger klog.Logger
	// slots, when set, says whether a write for a parent of a slot may be sent now (sharding)
	slots atomic.Pointer[func(slot int) bool]

	mu sync.Mutex
	// renewed is when the last successful acquire or renewal of our record was sent; zero while
	// not leading (a standby writes nothing).
	renewed time.Time
	// refusing is set while writes are refused, so that closing and reopening are logged once
	refusing bool
}

// reasonWriteFenced is the reason of the Status of a *fencedError.
const reasonWriteFenced metav1.StatusReason = "WriteFenced"

// fencedError is a write the fence refused: it was not sent.
type fencedError struct {
	// Method and Path of the request refused.
	Method, Path string
	// Lease is the Lease (namespace/name) the replica may no longer hold.
	Lease string
	// Since is how long ago the last acquire or renewal was sent; 0 when not leading.
	Since time.Duration
	// Window is how long after a renewal writes are allowed.
	Window time.Duration
	// Slot, when not nil, is the shard slot of the parent the write was for, which this replica
	// no longer holds (sharding).
	Slot *int
}

func (e *fencedError) Error() string {
	if e.Slot != nil {
		return fmt.Sprintf("write fenced: %s %s not sent: this replica no longer holds shard slot %d (its parents are moving to another replica)", e.Method, e.Path, *e.Slot)
	}
	if e.Since == 0 {
		return fmt.Sprintf("write fenced: %s %s not sent: this replica does not hold the Lease %s", e.Method, e.Path, e.Lease)
	}
	return fmt.Sprintf("write fenced: %s %s not sent: the Lease %s was last renewed %s ago (writes stop %s after a renewal), another replica may lead",
		e.Method, e.Path, e.Lease, e.Since.Round(time.Millisecond), e.Window)
}

// Status makes a fencedError an API status error (apierrors.APIStatus): 503, retryable.
func (e *fencedError) Status() metav1.Status {
	return metav1.Status{
		Status:  metav1.StatusFailure,
		Code:    http.StatusServiceUnavailable,
		Reason:  reasonWriteFenced,
		Message: e.Error(),
		Details: &metav1.StatusDetails{RetryAfterSeconds: 1},
	}
}

// newWriteFence returns a closed fence for the Lease of le.
func newWriteFence(logger klog.Logger, le LeaderElection, clk clock.PassiveClock) *writeFence {
	return &writeFence{clock: clk, window: fenceWindow(le), lease: le.Namespace + "/" + le.ID, logger: logger}
}

// newShardFence returns a closed fence for the shard Lease of sh's replica; setSlots makes it
// check each parent's slot too.
func newShardFence(logger klog.Logger, sh Sharding, clk clock.PassiveClock) *writeFence {
	le := LeaderElection{LeaseDuration: sh.LeaseDuration, RenewDeadline: sh.RenewDeadline}
	return &writeFence{clock: clk, window: fenceWindow(le), lease: sh.Namespace + "/" + shard.LeaseName(sh.Identity), logger: logger}
}

// setSlots makes the fence refuse a write for a parent whose slot allows says this replica may
// not write now.
func (f *writeFence) setSlots(allows func(slot int) bool) {
	f.slots.Store(&allows)
}

// fenceWindow is how long after sending a renewal the leader may still write: RenewDeadline,
// capped at 90 % of the Lease duration the record advertises (client-go writes whole seconds
// there, and standbys count with that).
func fenceWindow(le LeaderElection) time.Duration {
	advertised := le.LeaseDuration.Truncate(time.Second)
	return min(le.RenewDeadline, advertised-advertised/10)
}

// config returns a copy of cfg whose requests go through the fence.
func (f *writeFence) config(cfg *rest.Config) *rest.Config {
	cfg = rest.CopyConfig(cfg)
	cfg.Wrap(f.wrap)
	return cfg
}

// lock returns inner, recording the successful acquires and renewals of our record.
func (f *writeFence) lock(inner resourcelock.Interface) resourcelock.Interface {
	return &fencedLock{Interface: inner, fence: f}
}

// check returns nil when the write req may be sent now, else a *fencedError.
func (f *writeFence) check(req *http.Request) error {
	if err := f.checkLease(req.Method, req.URL.Path); err != nil {
		return err
	}
	if allows := f.slots.Load(); allows != nil {
		if slot, ok := hashslot.SlotFrom(req.Context()); ok && !(*allows)(slot) {
			return &fencedError{Method: req.Method, Path: req.URL.Path, Lease: f.lease, Window: f.window, Slot: &slot}
		}
	}
	return nil
}

// checkLease returns nil when the Lease was renewed less than the window ago.
func (f *writeFence) checkLease(method, path string) error {
	now := f.clock.Now()
	f.mu.Lock()
	defer f.mu.Unlock()
	var since time.Duration
	if !f.renewed.IsZero() {
		// monotonic when both readings have it; the wall clock's count too, whichever is larger
		since = max(now.Sub(f.renewed), now.Round(0).Sub(f.renewed.Round(0)))
		if since < f.window {
			if f.refusing {
				f.refusing = false
				f.logger.Info("Write fence open again: the Lease was renewed", "lease", f.lease)
			}
			return nil
		}
	}
	if since > 0 && !f.refusing {
		f.refusing = true
		f.logger.Info("Write fence closed: refusing writes until the Lease is renewed", "lease", f.lease, "lastRenewal", since.Round(time.Millisecond), "window", f.window)
	}
	return &fencedError{Method: method, Path: path, Lease: f.lease, Since: since, Window: f.window}
}

// renewedAt records a successful acquire or renewal sent at t.
func (f *writeFence) renewedAt(t time.Time) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if t.After(f.renewed) {
		f.renewed = t
	}
}

// revoke closes the fence at once: the Lease is released, or held by another replica.
func (f *writeFence) revoke(holder string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if !f.renewed.IsZero() {
		f.logger.Info("Write fence closed: this replica no longer holds the Lease", "lease", f.lease, "holder", holder)
	}
	f.renewed, f.refusing = time.Time{}, false
}

// mutating reports whether a request writes: all but reads (GET covers lists and watches).
func mutating(method string) bool {
	return method != http.MethodGet && method != http.MethodHead
}

// wrap is the transport middleware of the fenced clients.
func (f *writeFence) wrap(next http.RoundTripper) http.RoundTripper {
	return fencedTransport{fence: f, next: next}
}

type fencedTransport struct {
	fence *writeFence
	next  http.RoundTripper
}

func (t fencedTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if !mutating(req.Method) {
		return t.next.RoundTrip(req)
	}
	if err := t.fence.check(req); err != nil {
		if req.Body != nil {
			_ = req.Body.Close() // a RoundTripper closes the body, even on errors
		}
		return nil, err
	}
	if req.Body == nil || req.Body == http.NoBody {
		return t.next.RoundTrip(req)
	}
	// Check again as the transport reads the body, i.e. once it has a connection: a write
	// delayed between here and the wire (a freeze, a dial, a retry on a new connection) fails
	// before the API server has it whole.
	req = req.Clone(req.Context())
	req.Body = &fencedBody{ReadCloser: req.Body, req: req, fence: t.fence}
	if getBody := req.GetBody; getBody != nil {
		req.GetBody = func() (io.ReadCloser, error) {
			body, err := getBody()
			if err != nil {
				return nil, err
			}
			return &fencedBody{ReadCloser: body, req: req, fence: t.fence}, nil
		}
	}
	return t.next.RoundTrip(req)
}

// fencedBody checks the fence before each read of a write's body.
type fencedBody struct {
	io.ReadCloser
	req   *http.Request
	fence *writeFence
}

func (b *fencedBody) Read(p []byte) (int, error) {
	if err := b.fence.check(b.req); err != nil {
		return 0, err
	}
	return b.ReadCloser.Read(p)
}

// fencedLock is the elector's lock, telling the fence about our record's fate.
//
// It also keeps the record last read, and when it was seen to change: a Lease deleted is no
// proof that its holder stopped (anyone may delete it), yet client-go's elector creates a new
// one at once, and a standby would lead while the old leader's fence stays open. So, to a
// standby, a Lease gone reads as the record last seen until the duration it advertised has
// passed since it last changed (the elector then waits, as for a holder that stopped renewing);
// to the leader, as gone (its elector creates it again at once, and goes on leading).
type fencedLock struct {
	resourcelock.Interface
	fence *writeFence

	last    *resourcelock.LeaderElectionRecord
	lastRaw []byte
	changed time.Time
}

func (l *fencedLock) Get(ctx context.Context) (*resourcelock.LeaderElectionRecord, []byte, error) {
	rec, raw, err := l.Interface.Get(ctx)
	switch {
	case apierrors.IsNotFound(err) && l.heldByAnother():
		last := *l.last
		return &last, l.lastRaw, nil
	case err == nil && rec != nil:
		l.seen(rec, raw)
		if rec.HolderIdentity != l.Identity() {
			l.fence.revoke(rec.HolderIdentity) // the API server names another holder (or none): we do not lead
		}
	}
	return rec, raw, err
}

// seen records a record read, and when it changed.
func (l *fencedLock) seen(rec *resourcelock.LeaderElectionRecord, raw []byte) {
	if l.last == nil || !bytes.Equal(raw, l.lastRaw) || *rec != *l.last {
		l.changed = l.fence.clock.Now()
	}
	last := *rec
	l.last, l.lastRaw = &last, raw
}

// heldByAnother reports whether the record last seen names another holder and has not gone
// unchanged for the Lease duration it advertised.
func (l *fencedLock) heldByAnother() bool {
	if l.last == nil || l.last.HolderIdentity == "" || l.last.HolderIdentity == l.Identity() {
		return false
	}
	return l.fence.clock.Since(l.changed) < time.Duration(l.last.LeaseDurationSeconds)*time.Second
}

func (l *fencedLock) Create(ctx context.Context, rec resourcelock.LeaderElectionRecord) error {
	sent := l.fence.clock.Now()
	err := l.Interface.Create(ctx, rec)
	l.written(sent, rec, err)
	return err
}

func (l *fencedLock) Update(ctx context.Context, rec resourcelock.LeaderElectionRecord) error {
	sent := l.fence.clock.Now()
	err := l.Interface.Update(ctx, rec)
	l.written(sent, rec, err)
	return err
}

// written records the outcome of a write of the record sent at sent: ours, it opens the fence
// until sent + window; a release (no holder) closes it. A failed write changes nothing: the
// last success still bounds the window.
func (l *fencedLock) written(sent time.Time, rec resourcelock.LeaderElectionRecord, err error) {
	switch {
	case err != nil:
	case rec.HolderIdentity == l.Identity():
		l.fence.renewedAt(sent)
	default:
		l.fence.revoke(rec.HolderIdentity)
	}
}
