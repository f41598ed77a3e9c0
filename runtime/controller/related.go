package controller

import (
	"context"
	"sync"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/tools/cache"

	"metacel.dev/metacel/runtime/render"
)

// watchRelated acquires the informers of the policy's related resources.
func (c *Controller) watchRelated() {
	for _, rel := range c.policy.Related {
		if _, ok := c.related[rel.GVR.String()]; !ok {
			c.related[rel.GVR.String()] = c.acquire(rel.GVR, "", c.relatedHandler(rel.GVR))
		}
	}
}

// relatedHandler routes a related object's events to the parents that read it; an update routes
// the old object too, so that an object that stops matching a selector re-syncs its readers.
func (c *Controller) relatedHandler(gvr schema.GroupVersionResource) cache.ResourceEventHandler {
	route := func(obj any) {
		if t, ok := obj.(cache.DeletedFinalStateUnknown); ok {
			obj = t.Obj
		}
		u, ok := obj.(*unstructured.Unstructured)
		if !ok {
			return
		}
		for _, key := range c.relIndex.parentsReading(gvr, u) {
			c.queue.Add(key)
		}
	}
	return routeHandler(route)
}

// readRelated resolves the parent's related references and reads them from the caches; it
// remembers what the parent read, so that a change to it re-syncs the parent.
func (c *Controller) readRelated(ctx context.Context, key string, parent *unstructured.Unstructured) (map[string][]*unstructured.Unstructured, error) {
	if len(c.policy.Related) == 0 {
		return nil, nil
	}
	refs, err := render.Related(ctx, c.policy, parent)
	if err != nil {
		return nil, err
	}
	c.relIndex.set(key, refs)
	out := map[string][]*unstructured.Unstructured{}
	for _, ref := range refs {
		indexer := c.related[ref.Resource.String()].GetIndexer()
		if ref.Selector == nil {
			k := ref.Name
			if ref.Namespace != "" {
				k = ref.Namespace + "/" + ref.Name
			}
			if obj, ok, _ := indexer.GetByKey(k); ok {
				out[ref.ID] = append(out[ref.ID], obj.(*unstructured.Unstructured))
			}
			continue
		}
		objs, _ := indexer.ByIndex("namespace", ref.Namespace)
		for _, obj := range objs {
			if u := obj.(*unstructured.Unstructured); ref.Matches(u) {
				out[ref.ID] = append(out[ref.ID], u)
			}
		}
	}
	return out, nil
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
func (ix *relatedIndex) parentsReading(gvr schema.GroupVersionResource, obj *unstructured.Unstructured) []string {
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
