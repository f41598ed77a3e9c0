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
	"k8s.io/client-go/util/workqueue"
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
	// firstBackoff is the wait before retrying a failed write, doubling at each failure up to
	// maxBackoff.
	firstBackoff = 2 * interval
	maxBackoff   = 2 * time.Minute
	// resync is how often a ConfigMap is read again, to put back what someone removed
	// (kubectl replace, edit); a read finding nothing changed writes nothing.
	resync = 10 * time.Minute
)

// Reporter keeps the latest Status of each policy, by the ConfigMap holding it, and writes each
// ConfigMap's summary when it changes (Run). A nil Reporter is off: it records and writes nothing.
type Reporter struct {
	client    kubernetes.Interface
	namespace string
	clock     clock.PassiveClock // the queue's (a fake one in tests)
	// queue holds the names of the ConfigMaps to look at, now or later (AddAfter): a name is in it
	// once however often it is added
	queue workqueue.TypedDelayingInterface[string]
	// backoff is the wait before retrying each ConfigMap's failed write
	backoff workqueue.TypedRateLimiter[string]

	mu      sync.Mutex
	entries map[string]*entry // by ConfigMap name
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
	// verifyAt is when known is read again (resync)
	verifyAt time.Time
}

// NewReporter returns a Reporter writing on the ConfigMaps of namespace; "" turns it off (nil),
// as policies read from files have no ConfigMap.
func NewReporter(client kubernetes.Interface, namespace string) *Reporter {
	if namespace == "" {
		return nil
	}
	return newReporter(client, namespace, clock.RealClock{})
}

// newReporter returns a Reporter whose queue waits on clk.
func newReporter(client kubernetes.Interface, namespace string, clk clock.WithTicker) *Reporter {
	return &Reporter{
		client: client, namespace: namespace, clock: clk, entries: map[string]*entry{},
		queue:   workqueue.NewTypedDelayingQueueWithConfig(workqueue.TypedDelayingQueueConfig[string]{Clock: clk}),
		backoff: workqueue.NewTypedItemExponentialFailureRateLimiter[string](firstBackoff, maxBackoff),
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
	r.markDirtyLocked(configMap, e)
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
	r.markDirtyLocked(configMap, e)
}

// Reset forgets every status without writing anything, as when another replica takes over the
// writing (sharding's slot 0): the ConfigMaps keep what they hold, and no resync puts this
// Reporter's statuses, soon stale, back over the new writer's. A Set afterwards starts over.
func (r *Reporter) Reset() {
	if r == nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	clear(r.entries)
}

// markDirtyLocked notes that a ConfigMap's statuses changed, and queues it: Run writes it when
// its interval or backoff allows.
func (r *Reporter) markDirtyLocked(name string, e *entry) {
	e.dirty = true
	r.queue.Add(name)
}

// Run writes what changed until ctx is done: each ConfigMap at most once per interval, failed
// writes again with backoff. A nil Reporter returns at once. A Reporter runs once: its queue
// shuts down with ctx.
func (r *Reporter) Run(ctx context.Context) {
	if r == nil {
		return
	}
	stop := context.AfterFunc(ctx, r.queue.ShutDown)
	defer stop()
	for r.processNext(ctx) {
	}
}

// processNext processes the next ConfigMap the queue gives; false once the queue shut down or
// ctx is done.
func (r *Reporter) processNext(ctx context.Context) bool {
	name, shutdown := r.queue.Get()
	if shutdown {
		return false
	}
	defer r.queue.Done(name)
	if ctx.Err() != nil {
		return false
	}
	r.process(ctx, name)
	return true
}

// process flushes one ConfigMap when it is due, and queues it again for when it is next due.
func (r *Reporter) process(ctx context.Context, name string) {
	if r.due(name) {
		r.flush(ctx, name)
	}
	if wait, pending := r.nextDue(name); pending {
		r.queue.AddAfter(name, wait)
	}
}

// due says whether a ConfigMap is to be flushed now; one whose resync is due is read again.
func (r *Reporter) due(name string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	e := r.entries[name]
	if e == nil {
		return false
	}
	now := r.clock.Now()
	if !e.dirty && e.known != nil && !now.Before(e.verifyAt) {
		e.known, e.dirty = nil, true
	}
	return e.dirty && !now.Before(e.notBefore)
}

// nextDue says how long until a ConfigMap is due; pending is false when it will not be (it is
// forgotten, or what it holds is unknown and nothing is to write).
func (r *Reporter) nextDue(name string) (wait time.Duration, pending bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	e := r.entries[name]
	switch {
	case e == nil:
		return 0, false
	case e.dirty:
		return max(e.notBefore.Sub(r.clock.Now()), 0), true
	case e.known != nil:
		return max(e.verifyAt.Sub(r.clock.Now()), 0), true
	}
	return 0, false
}

// flush brings one ConfigMap's labels and annotations in line with its statuses: it reads the
// ConfigMap first when what it holds is unknown, and applies only when they differ. What it
// learns is recorded on the entry it began with only: one Reset meanwhile (or replaced since) is
// not the entry this flush wrote for.
func (r *Reporter) flush(ctx context.Context, name string) {
	e, want, known, uid := r.begin(name)
	if e == nil {
		return // reset since it was due
	}
	if known == nil {
		cm, err := r.read(ctx, name)
		if apierrors.IsNotFound(err) {
			r.drop(ctx, name, e)
			return
		}
		if err != nil {
			r.failed(ctx, name, e, err)
			return
		}
		observed := observedMetadata(cm)
		known, uid = &observed, cm.UID
	}
	if want.equal(*known) {
		r.written(name, e, *known, uid)
		return
	}
	if err := r.apply(ctx, name, uid, want); err != nil {
		r.failed(ctx, name, e, err)
		return
	}
	r.written(name, e, want, uid)
}

// begin takes what a flush of one ConfigMap needs: its entry (nil: none any more), the metadata
// wanted and what is known.
func (r *Reporter) begin(name string) (e *entry, want metadata, known *metadata, uid types.UID) {
	r.mu.Lock()
	defer r.mu.Unlock()
	e = r.entries[name]
	if e == nil {
		return nil, metadata{}, nil, ""
	}
	e.dirty = false // a Set from now on flushes again
	return e, desiredMetadata(e.statuses), e.known, e.uid
}

// written records that the ConfigMap holds m, on the entry the flush began with if it is still
// the ConfigMap's; a ConfigMap left with no policy and nothing written is forgotten.
func (r *Reporter) written(name string, e *entry, m metadata, uid types.UID) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.entries[name] != e {
		return
	}
	now := r.clock.Now()
	e.known, e.uid = &m, uid
	e.notBefore, e.verifyAt = now.Add(interval), now.Add(resync)
	r.backoff.Forget(name) // the backoff starts over
	if !e.dirty && len(e.statuses) == 0 && m.empty() {
		delete(r.entries, name)
	}
}

// failed schedules a retry with backoff; the ConfigMap is read again first, as a failed apply
// may mean it was replaced (another UID). An entry reset meanwhile is left alone.
func (r *Reporter) failed(ctx context.Context, name string, e *entry, err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.entries[name] != e {
		return
	}
	wait := r.backoff.When(name)
	e.known, e.dirty, e.notBefore = nil, true, r.clock.Now().Add(wait)
	logger := klog.FromContext(ctx).WithValues("configMap", klog.KRef(r.namespace, name), "failures", r.backoff.NumRequeues(name), "retryIn", wait)
	switch {
	case ctx.Err() != nil: // stopping
	case apierrors.IsConflict(err):
		logger.V(2).Info("Policy ConfigMap deleted or replaced; reading it again", "err", err)
	default:
		logger.Error(err, "Cannot write the status of a policy ConfigMap; will retry")
	}
}

// drop forgets a ConfigMap that does not exist: it is never re-created. A later Set starts over.
func (r *Reporter) drop(ctx context.Context, name string, e *entry) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.entries[name] != e {
		return
	}
	delete(r.entries, name)
	r.backoff.Forget(name)
	klog.FromContext(ctx).V(2).Info("Policy ConfigMap gone; its status is dropped", "configMap", klog.KRef(r.namespace, name))
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
