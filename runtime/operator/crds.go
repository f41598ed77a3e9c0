package operator

import (
	"bytes"
	"errors"
	"io"
	"maps"
	"slices"
	"sync"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	"metacel.dev/metacel/runtime/informers"
	"metacel.dev/metacel/runtime/policy"
	"metacel.dev/metacel/runtime/source"
)

var crdGVR = schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}

// crdChanges collects what happened to CRDs since it was last read, so that a burst of changes
// (kubectl apply -f crds/) costs one recompilation. Any change may let a waiting policy start (a
// CRD becomes Established); a CRD created may let a policy that failed for want of it load; a CRD
// deleted, or whose spec changes (its schema, its subresources), changes how the policies that
// use its resources compile.
type crdChanges struct {
	signal chan struct{}
	mu     sync.Mutex
	ch     crdChange
}

// crdChange names the CRDs (resource.group) that changed since the last take.
type crdChange struct {
	// named are the CRDs created, deleted or whose spec changed. A policy that runs on a CRD
	// created has, as a rule, compiled against it (a runtime that installs a policy's CRD starts
	// the policy once the API server serves the CRD, which may come before the CRD's event): it
	// compiles again, and restarts only if it compiles otherwise (sameCompiled), as against a CRD
	// of that name deleted unseen before the informer's first list.
	named map[string]bool
	// specs are those of named whose spec changed: the CRD's spec (its generation), or the CRD
	// itself (deleted, or deleted and created again under the same name: another UID). The
	// policies that use one restart whatever they compile.
	specs map[string]bool
}

// add records the CRD whose spec changed and the CRD created ("": none; both "" for a change of
// a CRD's status), and signals the change.
func (c *crdChanges) add(specChanged, created string) {
	c.mu.Lock()
	if specChanged != "" {
		c.ch.named[specChanged], c.ch.specs[specChanged] = true, true
	}
	if created != "" {
		c.ch.named[created] = true
	}
	c.mu.Unlock()
	select {
	case c.signal <- struct{}{}:
	default:
	}
}

// take returns what changed since the last take.
func (c *crdChanges) take() crdChange {
	c.mu.Lock()
	defer c.mu.Unlock()
	ch := c.ch
	c.ch = newCRDChange()
	return ch
}

func newCRDChange() crdChange {
	return crdChange{named: map[string]bool{}, specs: map[string]bool{}}
}

// crdPresence is told which CRDs exist: the mapper, whose discovery lags behind a deletion.
type crdPresence interface {
	CRDPresent(name string)
	CRDDeleted(name string)
}

// watchCRDs watches CRDs through the shared informer pool, telling presence which exist; the
// initial list only lets the waiting policies try again.
func watchCRDs(pool *informers.Pool, presence crdPresence) (*crdChanges, func()) {
	c := &crdChanges{signal: make(chan struct{}, 1), ch: newCRDChange()}
	inf, release := pool.Acquire(crdGVR, "")
	reg, err := inf.AddEventHandler(c.handler(presence))
	return c, func() {
		if err == nil {
			_ = inf.RemoveEventHandler(reg)
		}
		release()
	}
}

// handler sorts the CRD informer's events into c.
func (c *crdChanges) handler(presence crdPresence) cache.ResourceEventHandlerDetailedFuncs {
	return cache.ResourceEventHandlerDetailedFuncs{
		AddFunc: func(obj any, initial bool) {
			presence.CRDPresent(crdName(obj))
			if initial {
				c.add("", "") // created between a policy's load and this list: the waiting ones try again
				return
			}
			c.add("", crdName(obj))
		},
		UpdateFunc: func(old, obj any) {
			o, okOld := old.(metav1.Object)
			n, okNew := obj.(metav1.Object)
			if okOld && okNew && (o.GetGeneration() != n.GetGeneration() || o.GetUID() != n.GetUID()) {
				c.add(n.GetName(), "")
				return
			}
			c.add("", "")
		},
		DeleteFunc: func(obj any) {
			presence.CRDDeleted(crdName(obj))
			c.add(crdName(obj), "")
		},
	}
}

// crdName is the name of a CRD an event carries.
func crdName(obj any) string {
	if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = d.Obj
	}
	if m, err := meta.Accessor(obj); err == nil {
		return m.GetName()
	}
	return ""
}

// crdsChanged loads again, with what the cluster now says, the units a CRD change may affect:
// those waiting for a resource; those whose latest version failed and names a CRD created, or
// whose spec changed (it may have failed against the old schema); and those whose policies use a
// changed CRD's resources, or a created one's. A failed version that names none of them would
// fail the same way. The policies that use a changed CRD restart, compiled against the new
// schema, on informers that list afresh; those that use a created one restart only if they
// compile otherwise (crdChange.named).
func (s *policySet) crdsChanged(ch crdChange) {
	retry := affectedBy(ch)
	affected := false
	for _, st := range s.units {
		affected = affected || retry(st)
	}
	if !affected {
		return
	}
	s.reset()
	// an informer of a resource whose CRD changed, or was missing, lists afresh for its next user
	s.deps.Pool.Retire(func(gvr schema.GroupVersionResource) bool { return usesCRD(gvr, ch.named) })
	if len(ch.specs) > 0 {
		klog.FromContext(s.ctx).Info("CRDs changed their spec: the policies that use them restart", "crds", slices.Sorted(maps.Keys(ch.specs)))
	}
	s.reconcile(retry, restartsFor(ch))
}

// restartsFor picks the running policies a CRD change restarts: those that use a CRD whose spec
// changed; nil when none did.
func restartsFor(ch crdChange) func(*policy.Compiled) bool {
	if len(ch.specs) == 0 {
		return nil
	}
	return func(p *policy.Compiled) bool { return policyUsesCRD(p, ch.specs) }
}

// affectedBy picks the units a CRD change may change: waiting ones; failed ones that name a CRD
// created or changed; running ones that use one.
func affectedBy(ch crdChange) func(*unitState) bool {
	return func(st *unitState) bool {
		if st.waiting {
			return true
		}
		return st.failed && namesAny(st.crds, ch.named) ||
			slices.ContainsFunc(st.good, func(p *policy.Compiled) bool { return policyUsesCRD(p, ch.named) })
	}
}

// usesCRD reports whether a resource is served by one of the named CRDs.
func usesCRD(gvr schema.GroupVersionResource, crds map[string]bool) bool {
	return gvr.Group != "" && crds[gvr.Resource+"."+gvr.Group]
}

// policyUsesCRD reports whether a policy's parent, children or related objects are resources of
// the named CRDs.
func policyUsesCRD(p *policy.Compiled, crds map[string]bool) bool {
	if usesCRD(p.Parent.GVR, crds) {
		return true
	}
	for gvr := range p.ChildResources {
		if usesCRD(gvr, crds) {
			return true
		}
	}
	return slices.ContainsFunc(p.Related, func(r policy.CompiledRelated) bool { return usesCRD(r.GVR, crds) })
}

// crdsNamed returns the CRDs (resource.group) that a unit's policies name as parent, child or
// related resources. It reads the text loosely (unknown fields and wrong types elsewhere are
// ignored), so that a unit that fails to load still says which CRD changes may fix it.
func crdsNamed(u source.Unit) map[string]bool {
	out := map[string]bool{}
	eachPolicyNamed(u.Data, true, func(doc namedResources) {
		for _, r := range append(append([]namedResource{doc.Spec.ParentResource.namedResource}, doc.Spec.ChildResources...), doc.Spec.Related...) {
			if gv, err := schema.ParseGroupVersion(r.APIVersion); err == nil && gv.Group != "" && r.Resource != "" {
				out[r.Resource+"."+gv.Group] = true
			}
		}
	})
	return out
}

// namedResources is what crdsNamed reads of a document: a policy's resources, or a ConfigMap's
// data values holding policies.
type namedResources struct {
	Kind string            `json:"kind"`
	Data map[string]string `json:"data"`
	Spec struct {
		ParentResource struct {
			namedResource `json:",inline"`
			LabelSelector any `json:"labelSelector"`
		} `json:"parentResource"`
		ChildResources []namedResource `json:"childResources"`
		Related        []namedResource `json:"related"`
	} `json:"spec"`
}

type namedResource struct {
	APIVersion string `json:"apiVersion"`
	Resource   string `json:"resource"`
}

// maxDocuments bounds the documents read from one unit (a reader error repeats rather than ends).
const maxDocuments = 1000

// eachPolicyNamed calls visit with each document of data read loosely (in a ConfigMap, each
// document of its data values).
func eachPolicyNamed(data []byte, inConfigMap bool, visit func(namedResources)) {
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
	for range maxDocuments {
		var doc namedResources
		if err := dec.Decode(&doc); err != nil {
			if errors.Is(err, io.EOF) {
				return
			}
			continue // a document of the wrong shape names nothing; the next may
		}
		if doc.Kind == "ConfigMap" && inConfigMap {
			for _, v := range doc.Data {
				eachPolicyNamed([]byte(v), false, visit)
			}
			continue
		}
		visit(doc)
	}
}

// namesAny reports whether a and b have a name in common.
func namesAny(a, b map[string]bool) bool {
	for n := range a {
		if b[n] {
			return true
		}
	}
	return false
}
