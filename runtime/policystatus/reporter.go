package policystatus

import (
	"context"
	"fmt"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"metacel.dev/metacel/runtime/contract"
)

// FieldManager is the field manager of the status writes: it owns the labels and annotations
// this package writes, and nothing else of the ConfigMap.
const FieldManager = "metacel-status"

const (
	// requestTimeout bounds each request.
	requestTimeout = 30 * time.Second
	// interval is the least time between two writes to one ConfigMap.
	interval = time.Second
	// maxBackoff bounds the wait before retrying a failed write.
	maxBackoff = 2 * time.Minute
	// resync is how often a ConfigMap is read again, to put back what someone removed
	// (kubectl replace, edit); a read finding nothing changed writes nothing.
	resync = 10 * time.Minute
)

// Reporter keeps the latest Status of each policy, by the ConfigMap holding it, and writes each
// ConfigMap's summary when it changes (Run). A nil Reporter is off: it records and writes nothing.
type Reporter struct {
	client    kubernetes.Interface
	namespace string
	clock     clock.Clock // a fake one in tests

	mu      sync.Mutex
	entries map[string]*entry // by ConfigMap name
	wake    chan struct{}
}

// entry is one ConfigMap's statuses and what is known of its metadata.
type entry struct {
	statuses map[string]Status // by policy name
	// dirty is true when what is written may differ from statuses: a write (or a check) is due
	dirty bool
	// known is what the ConfigMap holds of the Reporter's labels and annotations: what was last
	// applied, or read; nil when unknown, and it is read before the next write
	known *metadata
	uid   types.UID
	// notBefore is the earliest time of the next request: coalescing, or backoff after failures
	notBefore time.Time
	failures  int
	// verifyAt is when known is read again (resync)
	verifyAt time.Time
}

// NewReporter returns a Reporter writing on the ConfigMaps of namespace; "" turns it off (nil),
// as policies read from files have no ConfigMap.
func NewReporter(client kubernetes.Interface, namespace string) *Reporter {
	if namespace == "" {
		return nil
	}
	return &Reporter{
		client: client, namespace: namespace, clock: clock.RealClock{},
		entries: map[string]*entry{}, wake: make(chan struct{}, 1),
	}
}

// Set records the latest status of a policy held by a ConfigMap. It only updates memory: Run
// writes. Setting the status already recorded does nothing.
func (r *Reporter) Set(configMap, policy string, s Status) {
	if r == nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	e := r.entries[configMap]
	if e == nil {
		e = &entry{statuses: map[string]Status{}}
		r.entries[configMap] = e
	}
	if old, ok := e.statuses[policy]; ok && old == s {
		return
	}
	e.statuses[policy] = s
	r.markDirtyLocked(e)
}

// Forget drops a policy that a ConfigMap no longer holds (or that is gone with its ConfigMap).
// Once a ConfigMap holds no policy, its labels and annotations are removed.
func (r *Reporter) Forget(configMap, policy string) {
	if r == nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	e := r.entries[configMap]
	if e == nil {
		return
	}
	if _, ok := e.statuses[policy]; !ok {
		return
	}
	delete(e.statuses, policy)
	r.markDirtyLocked(e)
}

func (r *Reporter) markDirtyLocked(e *entry) {
	e.dirty = true
	select {
	case r.wake <- struct{}{}:
	default: // Run is already woken
	}
}

// Run writes what changed until ctx is done: each ConfigMap at most once per interval, failed
// writes again with backoff. A nil Reporter returns at once.
func (r *Reporter) Run(ctx context.Context) {
	if r == nil {
		return
	}
	for {
		wait, pending := r.flushDue(ctx)
		if !r.sleep(ctx, wait, pending) {
			return
		}
	}
}

// sleep waits until a Set or Forget, or for wait when pending; false when ctx is done.
func (r *Reporter) sleep(ctx context.Context, wait time.Duration, pending bool) bool {
	var timeout <-chan time.Time
	if pending {
		timer := r.clock.NewTimer(wait)
		defer timer.Stop()
		timeout = timer.C()
	}
	select {
	case <-ctx.Done():
		return false
	case <-r.wake:
	case <-timeout:
	}
	return true
}

// flushDue writes (or checks) every ConfigMap that is due, and says how long until the next one
// is; pending is false when none is.
func (r *Reporter) flushDue(ctx context.Context) (wait time.Duration, pending bool) {
	for _, name := range r.due() {
		r.flush(ctx, name)
	}
	return r.nextDue()
}

// due lists the ConfigMaps to flush now; those whose resync is due are read again.
func (r *Reporter) due() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	now := r.clock.Now()
	var out []string
	for name, e := range r.entries {
		if !e.dirty && e.known != nil && !now.Before(e.verifyAt) {
			e.known, e.dirty = nil, true
		}
		if e.dirty && !now.Before(e.notBefore) {
			out = append(out, name)
		}
	}
	return out
}

// nextDue says how long until a ConfigMap is due; pending is false when none will be.
func (r *Reporter) nextDue() (wait time.Duration, pending bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	var next time.Time
	for _, e := range r.entries {
		at := e.notBefore
		if !e.dirty {
			if e.known == nil {
				continue
			}
			at = e.verifyAt
		}
		if !pending || at.Before(next) {
			next, pending = at, true
		}
	}
	if !pending {
		return 0, false
	}
	return max(next.Sub(r.clock.Now()), 0), true
}

// flush brings one ConfigMap's labels and annotations in line with its statuses: it reads the
// ConfigMap first when what it holds is unknown, and applies only when they differ.
func (r *Reporter) flush(ctx context.Context, name string) {
	want, known, uid := r.begin(name)
	if known == nil {
		cm, err := r.read(ctx, name)
		if apierrors.IsNotFound(err) {
			r.drop(ctx, name)
			return
		}
		if err != nil {
			r.failed(ctx, name, err)
			return
		}
		observed := observedMetadata(cm)
		known, uid = &observed, cm.UID
	}
	if want.equal(*known) {
		r.written(name, *known, uid)
		return
	}
	if err := r.apply(ctx, name, uid, want); err != nil {
		r.failed(ctx, name, err)
		return
	}
	r.written(name, want, uid)
}

// begin takes what a flush of one ConfigMap needs: the metadata wanted and what is known.
func (r *Reporter) begin(name string) (want metadata, known *metadata, uid types.UID) {
	r.mu.Lock()
	defer r.mu.Unlock()
	e := r.entries[name]
	e.dirty = false // a Set from now on flushes again
	return desiredMetadata(e.statuses), e.known, e.uid
}

// written records that the ConfigMap holds m; a ConfigMap left with no policy and nothing
// written is forgotten.
func (r *Reporter) written(name string, m metadata, uid types.UID) {
	r.mu.Lock()
	defer r.mu.Unlock()
	e := r.entries[name]
	now := r.clock.Now()
	e.known, e.uid, e.failures = &m, uid, 0
	e.notBefore, e.verifyAt = now.Add(interval), now.Add(resync)
	if !e.dirty && len(e.statuses) == 0 && m.empty() {
		delete(r.entries, name)
	}
}

// failed schedules a retry with backoff; the ConfigMap is read again first, as a failed apply
// may mean it was replaced (another UID).
func (r *Reporter) failed(ctx context.Context, name string, err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	e := r.entries[name]
	e.failures++
	wait := backoff(interval, e.failures)
	e.known, e.dirty, e.notBefore = nil, true, r.clock.Now().Add(wait)
	logger := klog.FromContext(ctx).WithValues("configMap", klog.KRef(r.namespace, name), "failures", e.failures, "retryIn", wait)
	switch {
	case ctx.Err() != nil: // stopping
	case apierrors.IsConflict(err):
		logger.V(2).Info("Policy ConfigMap deleted or replaced; reading it again", "err", err)
	default:
		logger.Error(err, "Cannot write the status of a policy ConfigMap; will retry")
	}
}

// drop forgets a ConfigMap that does not exist: it is never re-created. A later Set starts over.
func (r *Reporter) drop(ctx context.Context, name string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.entries, name)
	klog.FromContext(ctx).V(2).Info("Policy ConfigMap gone; its status is dropped", "configMap", klog.KRef(r.namespace, name))
}

// backoff is the wait after failures failed attempts: twice the interval, doubling, at most
// maxBackoff.
func backoff(interval time.Duration, failures int) time.Duration {
	wait := interval
	for range min(failures, 20) {
		wait *= 2
		if wait >= maxBackoff {
			return maxBackoff
		}
	}
	return wait
}

func (r *Reporter) read(ctx context.Context, name string) (*corev1.ConfigMap, error) {
	ctx, cancel := context.WithTimeout(ctx, requestTimeout)
	defer cancel()
	cm, err := r.client.CoreV1().ConfigMaps(r.namespace).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return nil, fmt.Errorf("read ConfigMap %s/%s: %w", r.namespace, name, err)
	}
	return cm, nil
}

// apply writes the ConfigMap's labels and annotations by server-side apply of its metadata
// only. The UID makes the API server refuse (Conflict) rather than create a ConfigMap that was
// deleted, and refuse to write on another one re-created under the same name.
func (r *Reporter) apply(ctx context.Context, name string, uid types.UID, m metadata) error {
	ctx, cancel := context.WithTimeout(ctx, requestTimeout)
	defer cancel()
	cm := corev1ac.ConfigMap(name, r.namespace).WithUID(uid).WithLabels(m.labels).WithAnnotations(m.annotations)
	if _, err := r.client.CoreV1().ConfigMaps(r.namespace).Apply(ctx, cm, metav1.ApplyOptions{FieldManager: FieldManager, Force: true}); err != nil {
		return fmt.Errorf("apply the status labels of ConfigMap %s/%s: %w", r.namespace, name, err)
	}
	klog.FromContext(ctx).V(4).Info("Wrote policy status", "configMap", klog.KRef(r.namespace, name), "state", m.labels[contract.LabelPolicyState])
	return nil
}
