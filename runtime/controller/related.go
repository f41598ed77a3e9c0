package controller

import (
	"context"
	"fmt"
	"strings"
	"sync"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/tools/cache"

	"metacel.dev/metacel/runtime/compact"
	"metacel.dev/metacel/runtime/expr"
	"metacel.dev/metacel/runtime/identity"
	"metacel.dev/metacel/runtime/informers"
	"metacel.dev/metacel/runtime/policy"
	"metacel.dev/metacel/runtime/render"
)

// relatedWatch is a controller's watch of its policy's related objects, and of namespaces when
// its confinement asks for their consent: their informers, which parent read which object
// (relatedIndex), and the reads of a sync (read).
type relatedWatch struct {
	policy *policy.Compiled
	access *access
	// informers are the related resources' informers, by GroupVersionResource string;
	// namespaces the namespaces' informer, when the policy asks for consent
	informers  map[string]cache.SharedIndexInformer
	namespaces cache.SharedIndexInformer
	// index is what each parent read of the related objects, looked up by related object to
	// route its events: not in parentStates, which is looked up by parent
	index *relatedIndex
	// enqueue asks for a sync of a parent; resyncAll for one of every parent, inputs forgotten
	enqueue   func(key string)
	resyncAll func()
}

func newRelatedWatch(p *policy.Compiled, a *access, enqueue func(string), resyncAll func()) *relatedWatch {
	return &relatedWatch{policy: p, access: a, informers: map[string]cache.SharedIndexInformer{}, index: newRelatedIndex(),
		enqueue: enqueue, resyncAll: resyncAll}
}

// acquireFunc acquires an informer whose events go to a handler, until the controller stops.
type acquireFunc func(gvr schema.GroupVersionResource, selector string, h cache.ResourceEventHandler, indexes ...string) cache.SharedIndexInformer

// watch acquires the informers of the policy's related resources, and of namespaces when
// its confinement asks for their consent. A resource that the policy reads only through one
// selector with literal labels is watched through that selector: the runtime then holds only
// what the policy may read, not every object of the resource.
func (rw *relatedWatch) watch(acquire acquireFunc) {
	for gvr, selector := range relatedSelectors(rw.policy.Related) {
		rw.informers[gvr.String()] = acquire(gvr, selector, rw.relatedHandler(gvr), cache.NamespaceIndex)
	}
	if labels := rw.policy.Confinement.ConsentLabels(); len(labels) > 0 {
		rw.namespaces = acquire(namespacesGVR, "", rw.namespaceHandler(labels))
	}
}

var namespacesGVR = schema.GroupVersionResource{Version: "v1", Resource: "namespaces"}

// relatedSelectors gives the label selector to watch each related resource through: its entries'
// one selector when they all read through it and it is literal, else "" (every object).
func relatedSelectors(rels []policy.CompiledRelated) map[schema.GroupVersionResource]string {
	out := map[schema.GroupVersionResource]string{}
	seen := map[schema.GroupVersionResource]bool{}
	for _, rel := range rels {
		sel := literalSelector(rel.Selector)
		if prev, ok := out[rel.GVR]; seen[rel.GVR] && (!ok || prev != sel) {
			sel = ""
		}
		seen[rel.GVR] = true
		out[rel.GVR] = sel
	}
	return out
}

// literalSelector is a selector's string when it has no ${} template, else "".
func literalSelector(s *metav1.LabelSelector) string {
	if s == nil {
		return ""
	}
	for _, v := range s.MatchLabels {
		if strings.Contains(v, "${") {
			return ""
		}
	}
	sel, err := metav1.LabelSelectorAsSelector(s)
	if err != nil || sel.Empty() {
		return ""
	}
	return sel.String()
}

// namespaceHandler re-syncs every parent when a namespace's consent labels change: what the
// parents may reach changed.
func (rw *relatedWatch) namespaceHandler(consent []string) cache.ResourceEventHandler {
	changed := func(old, obj any) bool {
		o, err1 := informers.MetaOf(old)
		n, err2 := informers.MetaOf(obj)
		if err1 != nil || err2 != nil {
			return true
		}
		for _, l := range consent {
			if informers.LabelsOf(o).Get(l) != informers.LabelsOf(n).Get(l) {
				return true
			}
		}
		return false
	}
	return cache.ResourceEventHandlerDetailedFuncs{
		AddFunc: func(_ any, initial bool) {
			if !initial {
				rw.resyncAll()
			}
		},
		UpdateFunc: func(old, obj any) {
			if changed(old, obj) {
				rw.resyncAll() // consent is an input the fingerprints do not cover
			}
		},
		DeleteFunc: func(any) { rw.resyncAll() },
	}
}

// namespaceLabels returns the labels of a namespace from the cache (the policy asks for consent).
func (rw *relatedWatch) namespaceLabels(name string) (map[string]string, bool) {
	if rw.namespaces == nil {
		return nil, false
	}
	obj, ok, _ := rw.namespaces.GetIndexer().GetByKey(name)
	if !ok {
		return nil, false
	}
	m, err := informers.MetaOf(obj)
	if err != nil {
		return nil, false
	}
	return m.GetLabels(), true
}

// relatedHandler routes a related object's events to the parents that read it; an update routes
// the old object too, so that an object that stops matching a selector re-syncs its readers.
func (rw *relatedWatch) relatedHandler(gvr schema.GroupVersionResource) cache.ResourceEventHandler {
	route := func(obj any, _ routing) {
		m, err := informers.MetaOf(obj)
		if err != nil {
			return
		}
		for _, key := range rw.index.parentsReading(gvr, m) {
			rw.enqueue(key)
		}
	}
	return routeHandler(route)
}

// read resolves the parent's related references and reads them from the caches; it
// remembers what the parent read, so that a change to it re-syncs the parent.
func (rw *relatedWatch) read(ctx context.Context, key string, parent *unstructured.Unstructured, budget *expr.Budget) (map[string][]*unstructured.Unstructured, error) {
	if len(rw.policy.Related) == 0 {
		return nil, nil
	}
	refs, err := render.RelatedInReach(ctx, rw.policy, parent, rw.namespaceLabels, budget)
	if err != nil {
		return nil, err
	}
	rw.index.set(key, refs)
	out := map[string][]*unstructured.Unstructured{}
	for _, ref := range refs {
		if err := rw.access.mayRead(ctx, relatedRead(ref)); err != nil {
			return nil, err
		}
		indexer := rw.informers[ref.Resource.String()].GetIndexer()
		if ref.Selector == nil {
			k := ref.Name
			if ref.Namespace != "" {
				k = ref.Namespace + "/" + ref.Name
			}
			if obj, ok, _ := indexer.GetByKey(k); ok {
				if err := appendDecoded(out, ref.ID, obj); err != nil {
					return nil, err
				}
			}
			continue
		}
		objs, _ := indexer.ByIndex(cache.NamespaceIndex, ref.Namespace)
		for _, obj := range objs {
			if m, err := informers.MetaOf(obj); err == nil && ref.Matches(m) {
				if err := appendDecoded(out, ref.ID, obj); err != nil {
					return nil, err
				}
			}
		}
	}
	return out, nil
}

// relatedRead is the read of a related entry: one object by name, or a list by selector.
func relatedRead(ref render.RelatedRef) identity.Read {
	if ref.Selector == nil {
		return identity.Read{Verb: "get", Resource: ref.Resource, Namespace: ref.Namespace, Name: ref.Name}
	}
	return identity.Read{Verb: "list", Resource: ref.Resource, Namespace: ref.Namespace}
}

// appendDecoded adds a cached object, decoded, to the objects of a related id.
func appendDecoded(out map[string][]*unstructured.Unstructured, id string, obj any) error {
	u, err := compact.Unstructured(obj)
	if err != nil {
		return fmt.Errorf("related %q: %w", id, err)
	}
	out[id] = append(out[id], u)
	return nil
}

// relatedIndex remembers which related objects each parent read in its last sync, so that a
// change to one re-syncs exactly the parents that read it.
type relatedIndex struct {
	mu       sync.Mutex
	byParent map[string][]render.RelatedRef
	// byName finds the parents reading one named object: resource/namespace/name -> parent keys
	byName map[string]map[string]bool
	// selectors holds the selector references of the parents that have any
	selectors map[string][]render.RelatedRef
}

func newRelatedIndex() *relatedIndex {
	return &relatedIndex{byParent: map[string][]render.RelatedRef{}, byName: map[string]map[string]bool{}, selectors: map[string][]render.RelatedRef{}}
}

func nameKey(gvr schema.GroupVersionResource, namespace, name string) string {
	return gvr.String() + "/" + namespace + "/" + name
}

// set records what a parent reads, replacing what it read before.
func (ix *relatedIndex) set(parent string, refs []render.RelatedRef) {
	ix.mu.Lock()
	defer ix.mu.Unlock()
	ix.forgetLocked(parent)
	if len(refs) == 0 {
		return
	}
	ix.byParent[parent] = refs
	for _, r := range refs {
		if r.Selector == nil {
			k := nameKey(r.Resource, r.Namespace, r.Name)
			if ix.byName[k] == nil {
				ix.byName[k] = map[string]bool{}
			}
			ix.byName[k][parent] = true
		} else {
			ix.selectors[parent] = append(ix.selectors[parent], r)
		}
	}
}

// forget drops a parent that is gone.
func (ix *relatedIndex) forget(parent string) {
	ix.mu.Lock()
	defer ix.mu.Unlock()
	ix.forgetLocked(parent)
}

func (ix *relatedIndex) forgetLocked(parent string) {
	for _, r := range ix.byParent[parent] {
		if r.Selector == nil {
			k := nameKey(r.Resource, r.Namespace, r.Name)
			delete(ix.byName[k], parent)
			if len(ix.byName[k]) == 0 {
				delete(ix.byName, k)
			}
		}
	}
	delete(ix.byParent, parent)
	delete(ix.selectors, parent)
}

// parentsReading returns the parents that read obj: by name in constant time, by selector by
// checking each parent that reads a list of that resource.
func (ix *relatedIndex) parentsReading(gvr schema.GroupVersionResource, obj metav1.Object) []string {
	ix.mu.Lock()
	defer ix.mu.Unlock()
	var out []string
	for p := range ix.byName[nameKey(gvr, obj.GetNamespace(), obj.GetName())] {
		out = append(out, p)
	}
	for p, refs := range ix.selectors {
		for _, r := range refs {
			if r.Resource == gvr && r.Matches(obj) {
				out = append(out, p)
				break
			}
		}
	}
	return out
}

// routing is why an object's event is routed.
type routing uint8

const (
	changed           routing = iota // added after the informer's first list, or updated
	inFirstList                      // added by the informer's first list (a start, a reload)
	unchangedInRelist                // updated at the same resourceVersion: the informer relisted
	deleted
)

// routeHandler calls route with every object an event concerns (an update's old and new), and
// why.
func routeHandler(route func(obj any, why routing)) cache.ResourceEventHandler {
	return cache.ResourceEventHandlerDetailedFuncs{
		AddFunc: func(obj any, isInInitialList bool) {
			if isInInitialList {
				route(obj, inFirstList)
			} else {
				route(obj, changed)
			}
		},
		UpdateFunc: func(old, obj any) {
			if unchanged(old, obj) {
				route(obj, unchangedInRelist)
				return
			}
			route(old, changed)
			route(obj, changed)
		},
		DeleteFunc: func(obj any) { route(obj, deleted) },
	}
}

// unchanged says whether an update's old and new object are at one resourceVersion: the
// informer relisted (its watch expired), and the object did not change meanwhile.
func unchanged(old, obj any) bool {
	o, err := informers.MetaOf(old)
	if err != nil {
		return false
	}
	n, err := informers.MetaOf(obj)
	return err == nil && o.GetResourceVersion() != "" && o.GetResourceVersion() == n.GetResourceVersion()
}
