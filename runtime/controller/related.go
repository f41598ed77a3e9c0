package controller

import (
	"sync"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"metacel.dev/metacel/runtime/render"
)

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
