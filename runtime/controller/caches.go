package controller

import (
	"context"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"metacel.dev/metacel/runtime/apply"
	"metacel.dev/metacel/runtime/compact"
	"metacel.dev/metacel/runtime/contract"
	"metacel.dev/metacel/runtime/informers"
	"metacel.dev/metacel/runtime/policy"
)

// caches are a controller's caches of its parents and of its child resources (package
// informers: whole, or one informer per shard slot), with the children it created lately
// (recentcreates.go). Syncs read them, never modify what they hold.
type caches struct {
	// policy is the policy's name: the children cached are those of its label
	policy   string
	parents  *informers.Cache
	children map[string]*childCache // by GroupVersionResource string
}

// watch acquires the informers of the parents (of selector) and of each child resource, keeping
// of its children what the policy reads (policy.ChildResourceInfo.Keep), whose events go to the
// handlers; sharded, one per slot, as slots are added.
func (cs *caches) watch(pool *informers.Pool, parent schema.GroupVersionResource, selector string, parentHandler cache.ResourceEventHandler,
	children map[schema.GroupVersionResource]policy.ChildResourceInfo, childHandler cache.ResourceEventHandler, sharded, serverSide bool, clk clock.PassiveClock) {
	cs.parents = informers.NewCache(pool, parent, selector, informers.ByUID, nil, parentHandler, sharded && serverSide)
	for gvr, info := range children {
		cs.children[gvr.String()] = newChildCache(pool, gvr, info.Keep, childHandler, sharded, clk)
	}
}

// releaseAll releases every informer (once watching), and forgets the children created lately.
func (cs *caches) releaseAll() {
	if cs.parents == nil {
		return
	}
	cs.parents.ReleaseAll()
	for _, rc := range cs.children {
		rc.releaseAll()
	}
}

// all returns the caches of the parents and of the child resources.
func (cs *caches) all() []*informers.Cache {
	out := []*informers.Cache{cs.parents}
	for _, rc := range cs.children {
		out = append(out, rc.Cache)
	}
	return out
}

// cachedChildren returns the objects of the policy that the caches hold for a parent (through the
// parent-uid index), whoever applied them, as their metadata: compact.Unstructured decodes one.
func (cs *caches) cachedChildren(uid types.UID) []metav1.Object {
	var out []metav1.Object
	for _, rc := range cs.children {
		objs, _ := rc.ByIndex(informers.ByParentUID, string(uid))
		for _, m := range objs {
			if contract.ChildPolicy(informers.LabelsOf(m)) == cs.policy {
				out = append(out, m)
			}
		}
	}
	return out
}

// observedChildren decodes the policy's objects cached for a parent (cachedChildren) into its
// children, by child id. Only objects metacel applied are children: an object made by someone
// else that merely carries a parent's labels is not (a child of its name is a conflict).
func observedChildren(ctx context.Context, cached []metav1.Object) map[string][]*unstructured.Unstructured {
	out := map[string][]*unstructured.Unstructured{}
	for _, m := range cached {
		u, err := compact.Unstructured(m)
		if err != nil {
			utilruntime.HandleErrorWithContext(ctx, err, "Skipping a child the cache cannot decode", "child", klog.KObj(m))
			continue
		}
		if !apply.AppliedBy(u) {
			continue
		}
		id := u.GetLabels()[contract.LabelChildID]
		out[id] = append(out[id], u)
	}
	return out
}

// allObjects flattens objects by child id.
func allObjects(byID map[string][]*unstructured.Unstructured) []*unstructured.Unstructured {
	var out []*unstructured.Unstructured
	for _, objs := range byID {
		out = append(out, objs...)
	}
	return out
}
