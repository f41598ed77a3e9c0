package priorityqueue

import "k8s.io/client-go/util/workqueue"

// Workqueue is client-go's rate-limiting workqueue over a Queue: Add asks for a key at high
// priority, AddLow at low. A key added after a delay (AddAfter) or a rate limit (AddRateLimited)
// is high.
type Workqueue[T comparable] struct {
	workqueue.TypedRateLimitingInterface[T]
	order *Queue[T]
}

// NewWorkqueue returns a Workqueue named name (its metrics' name), rate limited by limiter.
func NewWorkqueue[T comparable](name string, limiter workqueue.TypedRateLimiter[T]) *Workqueue[T] {
	order := NewQueue[T]()
	queue := workqueue.NewTypedWithConfig(workqueue.TypedQueueConfig[T]{Name: name, Queue: order})
	delaying := workqueue.NewTypedDelayingQueueWithConfig(workqueue.TypedDelayingQueueConfig[T]{Name: name, Queue: queue})
	return &Workqueue[T]{
		TypedRateLimitingInterface: workqueue.NewTypedRateLimitingQueueWithConfig(limiter,
			workqueue.TypedRateLimitingQueueConfig[T]{Name: name, DelayingQueue: delaying}),
		order: order,
	}
}

// Add asks for key at high priority: before every key asked for at low.
func (w *Workqueue[T]) Add(key T) { w.add(key, high) }

// AddLow asks for key at low priority: after every key asked for at high, unless an add at high
// asks for it too before a worker takes it.
func (w *Workqueue[T]) AddLow(key T) { w.add(key, low) }

func (w *Workqueue[T]) add(key T, lv level) {
	if w.ShuttingDown() {
		return // the workqueue takes no add, and would leave the announcement
	}
	w.order.ask(key, lv)
	w.TypedRateLimitingInterface.Add(key)
}
