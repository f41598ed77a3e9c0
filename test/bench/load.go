//go:build e2e

package main

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
)

// counter counts a client's requests as apiserver_request_total labels them, so that the load
// client's own requests can be taken out of the API server's counts.
type counter struct {
	mu sync.Mutex
	c  counts
}

func (c *counter) wrap(next http.RoundTripper) http.RoundTripper {
	return roundTripFunc(func(r *http.Request) (*http.Response, error) {
		k := classify(r)
		resp, err := next.RoundTrip(r)
		if resp != nil {
			k.Failed = failure(resp.StatusCode)
		}
		c.mu.Lock()
		c.c[k]++
		c.mu.Unlock()
		return resp, err
	})
}

func (c *counter) snapshot() counts {
	c.mu.Lock()
	defer c.mu.Unlock()
	return counts{}.add(c.c, 1)
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// classify names a request as the API server's metrics do: verb (LIST and WATCH for collection
// GETs, APPLY for server-side apply), group, resource and subresource; a non-resource request is
// its path.
func classify(r *http.Request) reqKey {
	parts := strings.Split(strings.Trim(r.URL.Path, "/"), "/")
	var group string
	switch {
	case len(parts) >= 2 && parts[0] == "api":
		parts = parts[2:]
	case len(parts) >= 3 && parts[0] == "apis":
		group, parts = parts[1], parts[3:]
	default:
		return reqKey{Verb: r.Method, Subresource: r.URL.Path}
	}
	if len(parts) >= 3 && parts[0] == "namespaces" {
		parts = parts[2:] // a namespaced resource; "namespaces/<ns>" alone is the namespace
	} else if len(parts) == 2 && parts[0] == "namespaces" {
		parts = []string{"namespaces", parts[1]}
	}
	if len(parts) == 0 {
		return reqKey{Verb: r.Method, Subresource: r.URL.Path}
	}
	k := reqKey{Group: group, Resource: parts[0]}
	named := len(parts) >= 2
	if len(parts) >= 3 {
		k.Subresource = parts[2]
	}
	switch r.Method {
	case http.MethodGet:
		switch {
		case r.URL.Query().Get("watch") == "true" || r.URL.Query().Get("watch") == "1":
			k.Verb = "WATCH"
		case named:
			k.Verb = "GET"
		default:
			k.Verb = "LIST"
		}
	case http.MethodPatch:
		k.Verb = "PATCH"
		if strings.HasPrefix(r.Header.Get("Content-Type"), "application/apply-patch") {
			k.Verb = "APPLY"
		}
	case http.MethodDelete:
		k.Verb = "DELETE"
		if !named {
			k.Verb = "DELETECOLLECTION"
		}
	default:
		k.Verb = r.Method
	}
	return k
}

// tracker follows the benchmark namespace's parents and children (MyApps and Pods, or Memcacheds
// and Deployments) through watches (no polling), and closes done when every parent is done and
// every one of their children is as wanted, and allRunning when every one of their Pods is bound
// and Running (on a cluster with nodes). Its "pods" are the children.
type tracker struct {
	mu         sync.Mutex
	want       int
	isDone     func(*unstructured.Unstructured) bool
	parents    map[string]bool // name -> done
	nDone      int
	pods       map[string]bool
	running    map[string]bool // the Pods bound and Running
	expected   func(pod string) bool
	child      childKind
	done       chan struct{}
	doneAt     time.Time
	closed     bool
	allRunning chan struct{}
	runningAt  time.Time
}

// newTracker starts informers on ns with the load client, of j's parents and children; it returns
// once they have synced.
func newTracker(ctx context.Context, cfg *rest.Config, ns string, j *job, want int, isDone func(*unstructured.Unstructured) bool, expected func(string) bool) (*tracker, error) {
	t := &tracker{want: want, isDone: isDone, parents: map[string]bool{}, pods: map[string]bool{}, running: map[string]bool{},
		expected: expected, done: make(chan struct{}), allRunning: make(chan struct{}), child: j.child}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	kube, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	apps := dynamicinformer.NewFilteredDynamicSharedInformerFactory(dyn, 0, ns, nil).ForResource(j.parent).Informer()
	pods := j.child.informer(informers.NewSharedInformerFactoryWithOptions(kube, 0, informers.WithNamespace(ns)))
	_, _ = apps.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { t.parent(obj, false) },
		UpdateFunc: func(_, obj any) { t.parent(obj, false) },
		DeleteFunc: func(obj any) { t.parent(obj, true) },
	})
	_, _ = pods.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { t.pod(obj, true) },
		UpdateFunc: func(_, obj any) { t.pod(obj, true) },
		DeleteFunc: func(obj any) { t.pod(obj, false) },
	})
	go apps.RunWithContext(ctx)
	go pods.RunWithContext(ctx)
	if !cache.WaitForCacheSync(ctx.Done(), apps.HasSynced, pods.HasSynced) {
		return nil, fmt.Errorf("load client: caches did not sync")
	}
	return t, nil
}

func (t *tracker) parent(obj any, deleted bool) {
	if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = d.Obj
	}
	u, ok := obj.(*unstructured.Unstructured)
	if !ok {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	was := t.parents[u.GetName()]
	now := !deleted && t.isDone(u)
	if deleted {
		delete(t.parents, u.GetName())
	} else {
		t.parents[u.GetName()] = now
	}
	switch {
	case now && !was:
		t.nDone++
	case was && !now:
		t.nDone--
	}
	t.check()
}

func (t *tracker) pod(obj any, exists bool) {
	if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = d.Obj
	}
	name, ok, running := t.child.state(obj)
	if name == "" || !t.expected(name) {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if exists && ok {
		t.pods[name] = true
	} else {
		delete(t.pods, name)
	}
	if exists && running {
		t.running[name] = true
	} else {
		delete(t.running, name)
	}
	t.check()
}

// check closes done the first time every parent is done and every Pod exists (t.mu held).
func (t *tracker) check() {
	if !t.closed && t.nDone >= t.want && len(t.pods) >= t.want {
		t.closed, t.doneAt = true, time.Now()
		close(t.done)
	}
	if t.runningAt.IsZero() && len(t.running) >= t.want {
		t.runningAt = time.Now()
		close(t.allRunning)
	}
}

func (t *tracker) state() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return fmt.Sprintf("%d of %d parents done, %d Pods, %d bound and Running", t.nDone, t.want, len(t.pods), len(t.running))
}

// createParents creates the parents (of resource gvr) named from the sample in ns with 16
// concurrent clients, retrying a failed create; it returns when all exist.
func createParents(ctx context.Context, dyn dynamic.Interface, gvr schema.GroupVersionResource, sample *unstructured.Unstructured, ns string, names []string) error {
	var wg sync.WaitGroup
	work := make(chan string)
	errs := make(chan error, 16)
	for range 16 {
		wg.Go(func() {
			for name := range work {
				app := sample.DeepCopy()
				app.SetName(name)
				app.SetNamespace(ns)
				var err error
				for attempt := 0; attempt < 5; attempt++ {
					if _, err = dyn.Resource(gvr).Namespace(ns).Create(ctx, app, metav1.CreateOptions{}); err == nil || ctx.Err() != nil {
						break
					}
					time.Sleep(time.Duration(attempt+1) * 100 * time.Millisecond)
				}
				if err != nil {
					select {
					case errs <- fmt.Errorf("create %s %s: %w", gvr.Resource, name, err):
					default:
					}
				}
			}
		})
	}
	for _, n := range names {
		work <- n
	}
	close(work)
	wg.Wait()
	select {
	case err := <-errs:
		return err
	default:
		return nil
	}
}
