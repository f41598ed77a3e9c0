package controller

import (
	"fmt"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	"metacel.dev/metacel/runtime/compact"
	"metacel.dev/metacel/runtime/contract"
	"metacel.dev/metacel/runtime/informers"
)

// handRecentCreates is recentCreates as it was before its sweep was paced (a map swept of expired
// children at each add), kept as the baseline of BenchmarkRecentCreates.
type handRecentCreates struct {
	mu     sync.Mutex
	byName map[string]handRecentCreate
}

type handRecentCreate struct {
	obj *unstructured.Unstructured
	// created is when the create returned; delivered when the cache delivered the child (zero:
	// not yet)
	created, delivered time.Time
}

func (r handRecentCreate) expired(now time.Time) bool {
	if r.delivered.IsZero() {
		return now.Sub(r.created) > undeliveredFor
	}
	return now.Sub(r.delivered) > deliveredFor
}

// add remembers a child as its create returned it, and forgets those remembered long enough.
func (rc *handRecentCreates) add(obj metav1.Object, now time.Time) {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	for name, r := range rc.byName {
		if r.expired(now) {
			delete(rc.byName, name)
		}
	}
	if rc.byName == nil {
		rc.byName = map[string]handRecentCreate{}
	}
	rc.byName[obj.GetNamespace()+"/"+obj.GetName()] = handRecentCreate{obj: obj.(*unstructured.Unstructured), created: now}
}

// lookup returns the child of that name created lately for the parent of that UID, or nil.
func (rc *handRecentCreates) lookup(namespace, name, parentUID string, now time.Time) *unstructured.Unstructured {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	r, ok := rc.byName[namespace+"/"+name]
	switch {
	case !ok:
		return nil
	case r.expired(now):
		delete(rc.byName, namespace+"/"+name)
		return nil
	case r.obj.GetLabels()[contract.LabelParentUID] != parentUID:
		return nil // an earlier parent's of the same name
	}
	return r.obj
}

// delivered notes that the cache delivered a child created lately.
func (rc *handRecentCreates) delivered(obj any, now time.Time) {
	rc.update(obj, func(name string, r handRecentCreate) {
		if r.delivered.IsZero() {
			r.delivered = now
			rc.byName[name] = r
		}
	})
}

// update calls f, under the lock, with the child remembered that is obj (its name and UID).
func (rc *handRecentCreates) update(obj any, f func(name string, r handRecentCreate)) {
	m, err := informers.MetaOf(obj)
	if err != nil {
		return
	}
	rc.mu.Lock()
	defer rc.mu.Unlock()
	name := m.GetNamespace() + "/" + m.GetName()
	if r, ok := rc.byName[name]; ok && r.obj.GetUID() == m.GetUID() {
		f(name, r)
	}
}

// recentCreatesStore is what the sync path asks of the children created lately: a create
// remembers its child (add), each create first looks for one (lookup); and the event path: each
// child event notes its delivery (delivered).
type recentCreatesStore interface {
	add(obj metav1.Object, now time.Time)
	lookup(namespace, name, parentUID string, now time.Time) *unstructured.Unstructured
	delivered(obj any, now time.Time)
}

// pacedStore is recentCreates, given the children as their cache holds them.
type pacedStore struct{ *recentCreates }

func (p pacedStore) add(obj metav1.Object, now time.Time) {
	p.recentCreates.add(obj.(*compact.Object), now)
}

// mutationCacheStore is client-go's MutationCache over an empty store, as far as it can stand in
// for recentCreates (no delivery, no delete, 100 objects, the system's clock): a reference for
// the cost of its calls, not a replacement.
type mutationCacheStore struct{ mc cache.MutationCache }

func (m mutationCacheStore) add(obj metav1.Object, _ time.Time) { m.mc.Mutation(obj) }

func (m mutationCacheStore) lookup(namespace, name, parentUID string, _ time.Time) *unstructured.Unstructured {
	obj, ok, _ := m.mc.GetByKey(namespace + "/" + name)
	if !ok {
		return nil
	}
	u := obj.(*unstructured.Unstructured)
	if u.GetLabels()[contract.LabelParentUID] != parentUID {
		return nil
	}
	return u
}

func (mutationCacheStore) delivered(any, time.Time) {}

// BenchmarkRecentCreates measures the sync path's calls on the children created lately, with
// live children remembered (children created at a pace that keeps live of them within
// undeliveredFor): recentCreates (its sweep paced, sweepEvery) against the map swept at each add
// it was before (hand), and client-go's MutationCache for reference (its calls only), in the
// same run.
func BenchmarkRecentCreates(b *testing.B) {
	stores := []struct {
		name string
		new  func() recentCreatesStore
		// held: the store is given the children as their cache holds them (compact.AsCached), as
		// the controller gives them
		held bool
	}{
		{"hand", func() recentCreatesStore { return &handRecentCreates{} }, false},
		{"paced", func() recentCreatesStore { return pacedStore{&recentCreates{}} }, true},
		{"mutationcache", func() recentCreatesStore {
			return mutationCacheStore{cache.NewIntegerResourceVersionMutationCache(klog.Background(), cache.NewStore(cache.MetaNamespaceKeyFunc), nil, undeliveredFor, true)}
		}, false},
	}
	for _, live := range []int{10, 1000} {
		decoded := benchChildren(2 * live) // a name comes back once it expired
		held := heldAsCached(b, decoded)
		step := undeliveredFor / time.Duration(live)
		for _, s := range stores {
			children := decoded
			if s.held {
				children = held
			}
			// fill returns a store holding live children, and the time and index of the next
			fill := func() (recentCreatesStore, time.Time, int) {
				st, now := s.new(), time.Now()
				for i := range live {
					st.add(children[i], now)
					now = now.Add(step)
				}
				return st, now, live
			}
			b.Run(fmt.Sprintf("add/live=%d/%s", live, s.name), func(b *testing.B) {
				st, now, i := fill()
				b.ReportAllocs()
				for b.Loop() {
					st.add(children[i%len(children)], now)
					now, i = now.Add(step), i+1
				}
			})
			b.Run(fmt.Sprintf("lookup-miss/live=%d/%s", live, s.name), func(b *testing.B) {
				st, now, _ := fill()
				b.ReportAllocs()
				for b.Loop() {
					if st.lookup("ns", "not-created", "p-0", now) != nil {
						b.Fatal("a child never created is found")
					}
				}
			})
			b.Run(fmt.Sprintf("lookup-hit/live=%d/%s", live, s.name), func(b *testing.B) {
				if s.name == "mutationcache" {
					b.Skip("MutationCache forgets an object its store does not hold at the first GetByKey that returns it (it compares the object with itself)")
				}
				st, now, i := fill()
				last := children[i-1]
				b.ReportAllocs()
				for b.Loop() {
					if st.lookup("ns", last.GetName(), last.GetLabels()[contract.LabelParentUID], now) == nil {
						b.Fatal("the child created last is not found")
					}
				}
			})
			b.Run(fmt.Sprintf("delivered/live=%d/%s", live, s.name), func(b *testing.B) {
				st, now, i := fill()
				b.ReportAllocs()
				for b.Loop() {
					st.delivered(children[i%live], now) // once delivered, an update's event
					i++
				}
			})
			b.Run(fmt.Sprintf("event-of-another/live=%d/%s", live, s.name), func(b *testing.B) {
				st, now, i := fill()
				b.ReportAllocs()
				for b.Loop() {
					st.delivered(children[live+i%live], now) // a child not created lately: most events
					i++
				}
			})
		}
	}
}

// heldAsCached returns the children as a cache holds them.
func heldAsCached(b *testing.B, children []metav1.Object) []metav1.Object {
	out := make([]metav1.Object, len(children))
	for i, c := range children {
		out[i] = heldAsItsCacheHoldsIt(b, c.(*unstructured.Unstructured))
	}
	return out
}

// benchChildren returns n children of distinct names, child i of parent p-i.
func benchChildren(n int) []metav1.Object {
	out := make([]metav1.Object, n)
	for i := range out {
		c := &unstructured.Unstructured{}
		c.SetAPIVersion("v1")
		c.SetKind("Secret")
		c.SetNamespace("ns")
		c.SetName(fmt.Sprintf("c-%05d", i))
		c.SetUID(types.UID(fmt.Sprintf("uid-%05d", i)))
		c.SetResourceVersion(fmt.Sprint(1000 + i))
		c.SetLabels(map[string]string{contract.LabelParentUID: fmt.Sprintf("p-%d", i)})
		out[i] = c
	}
	return out
}
