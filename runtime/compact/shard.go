package compact

import (
	"context"
	"fmt"
	"sync"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"

	"metacel.dev/metacel/runtime/hashslot"
)

// ShardedListWatch is ListWatch for the objects whose UID hashes into r (hashslot.Range.Contains).
// With serverSide, the API server selects them (ListOptions.ShardSelector, which needs its
// ShardedListAndWatch feature gate: see ProbeShardSupport); without, the requests are
// ListWatch's, and the list items and watch events of the objects outside r are dropped here,
// before the informer sees them (bookmarks and errors pass).
func (c *Client) ShardedListWatch(gvr schema.GroupVersionResource, labelSelector string, r hashslot.Range, serverSide bool) *cache.ListWatch {
	if serverSide {
		return c.listWatch(gvr, labelSelector, r.Selector(), nil)
	}
	return c.listWatch(gvr, labelSelector, "", r.Contains)
}

// ProbeShardSupport reports whether the API server honours shard selectors: it lists at most one
// ConfigMap of namespace with a shard selector over the whole hash space and looks for the
// shardInfo a server with the ShardedListAndWatch gate echoes (the gate is server-wide, and
// built-in resources echo it where custom resources may not; a server without the gate ignores
// the selector).
func ProbeShardSupport(ctx context.Context, kube kubernetes.Interface, namespace string) (bool, error) {
	opts := metav1.ListOptions{Limit: 1, ShardSelector: hashslot.Range{From: 0, To: hashslot.Count}.Selector()}
	list, err := kube.CoreV1().ConfigMaps(namespace).List(ctx, opts)
	if err != nil {
		return false, fmt.Errorf("probe the API server for sharded lists (list ConfigMaps in %s): %w", namespace, err)
	}
	return list.ShardInfo != nil, nil
}

// keep drops the items whose UID keep refuses.
func (l *List) keep(keep func(types.UID) bool) {
	items := l.Items[:0]
	for i := range l.Items {
		if keep(l.Items[i].uid) {
			items = append(items, l.Items[i])
		}
	}
	clear(l.Items[len(items):]) // let the dropped objects' bytes go
	l.Items = items
}

// filteredWatch passes on the events of a watch but those of the objects whose UID keep refuses.
// Unlike watch.Filter, its goroutine ends on Stop even when nobody reads the events any more.
type filteredWatch struct {
	in   watch.Interface
	out  chan watch.Event
	keep func(types.UID) bool
	stop chan struct{}
	once sync.Once
}

func filterWatch(in watch.Interface, keep func(types.UID) bool) watch.Interface {
	w := &filteredWatch{in: in, out: make(chan watch.Event), keep: keep, stop: make(chan struct{})}
	go w.run()
	return w
}

func (w *filteredWatch) ResultChan() <-chan watch.Event { return w.out }

func (w *filteredWatch) Stop() {
	w.once.Do(func() {
		close(w.stop)
		w.in.Stop()
	})
}

func (w *filteredWatch) run() {
	defer close(w.out)
	for {
		select {
		case <-w.stop:
			return
		case e, ok := <-w.in.ResultChan():
			if !ok {
				return
			}
			if !w.passes(e) {
				continue
			}
			select {
			case w.out <- e:
			case <-w.stop:
				return
			}
		}
	}
}

// passes reports whether an event reaches the informer: one of an object outside the range does
// not; bookmarks and errors do.
func (w *filteredWatch) passes(e watch.Event) bool {
	switch e.Type {
	case watch.Added, watch.Modified, watch.Deleted:
		if o, ok := e.Object.(*Object); ok {
			return w.keep(o.uid)
		}
	}
	return true
}
