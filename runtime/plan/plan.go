package plan

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/klog/v2"

	"metacel.dev/metacel/runtime/decide"
	"metacel.dev/metacel/runtime/kinds"
	"metacel.dev/metacel/runtime/policy"
)

// Input is what a plan compares, and the cluster it reads.
type Input struct {
	// Candidate is the new version of the policy.
	Candidate *policy.Compiled
	// Running is the version running now; nil when the policy is new.
	Running *policy.Compiled
	// Recorded are the child resources the policy's ledger entry records (runtime/ledger): the
	// children of those the candidate does not list are removed too.
	Recorded []schema.GroupVersionResource
	// Client reads the cluster and sends the dry runs: as the candidate's ServiceAccount, so that
	// what it may not read or write fails here as it would in the runtime.
	Client dynamic.Interface
	// Namespaces, when set, reads the Namespaces' consent labels, as the runtime reads them with
	// its own identity; nil: Client.
	Namespaces dynamic.Interface
	// ReservedNamespace is the policy namespace, which never holds a child, as in the runtime.
	ReservedNamespace string
	// Mapper knows the cluster's kinds (kinds.Discovery).
	Mapper kinds.Mapper
	// Workers is how many parents are planned at once; 0 means 8.
	Workers int
}

// Plan is what the candidate would change, parent by parent.
type Plan struct {
	Policy string `json:"policy"`
	// Running names the version it is compared with ("" for a new policy).
	Running string `json:"running,omitempty"`
	// Parents are the parents that would change or fail, by namespace and name.
	Parents []Parent `json:"parents"`
	Totals  Totals   `json:"totals"`
	// Versions is what the candidate changes of the parent's API versions, when it installs a
	// CRD of several versions; nil otherwise.
	Versions *VersionChange `json:"versions,omitempty"`
}

// VersionChange is what a candidate that declares several versions of its parent's API does to
// the CRD and the stored parents.
type VersionChange struct {
	// Served are the versions the cluster serves now, and Declared those the candidate serves.
	Served, Declared []string `json:",omitempty"`
	// Storage is the candidate's storage version; Migrated how many stored parents the runtime
	// would rewrite at it because the running version stores them at another.
	Storage  string `json:"storage"`
	Migrated int    `json:"migrated"`
}

// Parent is what the candidate would change of one parent.
type Parent struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Namespace  string `json:"namespace,omitempty"`
	Name       string `json:"name"`
	// Error says why the parent would fail (its render, or a dry run); "" when it would not.
	Error    string   `json:"error,omitempty"`
	Children []Change `json:"children,omitempty"`
	// Status lists the fields of its status that would change.
	Status []FieldChange `json:"status,omitempty"`
	// Readiness is how its Ready condition changes whatever the candidate, because this version
	// of metacel judges children with no readyWhen by their kind (runtime/readiness): the live
	// condition against the one the running version computes here. nil when they agree, or when
	// every child of the running version has a readyWhen.
	Readiness *FieldChange `json:"readiness,omitempty"`
}

// Failing reports whether the parent would fail under the candidate.
func (p Parent) Failing() bool { return p.Error != "" }

// Changed reports whether the candidate would change anything of the parent, or fail on it.
func (p Parent) Changed() bool {
	return p.Failing() || len(p.Children) > 0 || len(p.Status) > 0 || p.Readiness != nil
}

// String names the parent as kubectl does: Kind namespace/name.
func (p Parent) String() string { return p.Kind + " " + namespaced(p.Namespace, p.Name) }

// Change is what the runtime would do to one child.
type Change struct {
	// Action is decide's: create, update, recreate, update-bookkeeping, delete or release
	Action     decide.Action `json:"action"`
	APIVersion string        `json:"apiVersion"`
	Kind       string        `json:"kind"`
	Namespace  string        `json:"namespace,omitempty"`
	Name       string        `json:"name"`
	// Disruptive marks a change that replaces a live object (a recreation).
	Disruptive bool   `json:"disruptive,omitempty"`
	Why        string `json:"why"`
	// Fields are the fields of the desired object that change from the running version to the
	// candidate (an update or recreation).
	Fields []FieldChange `json:"fields,omitempty"`
	// DryRunError is the API server's answer to the dry run of the write, when it refused it.
	DryRunError string `json:"dryRunError,omitempty"`

	// desired is the object the candidate would write (create, update, recreate), and gvr its
	// resource
	desired *unstructured.Unstructured
	gvr     schema.GroupVersionResource
	// observed and patch are the child and the patch of its metadata of an UpdateBookkeeping step
	observed *unstructured.Unstructured
	patch    map[string]any
}

// String names the change in one line: action, apiVersion, kind, namespace/name.
func (c Change) String() string {
	return fmt.Sprintf("%s %s %s %s", c.Action, c.APIVersion, c.Kind, namespaced(c.Namespace, c.Name))
}

// Totals count a plan's parents and changes.
type Totals struct {
	Parents   int `json:"parents"`
	Changed   int `json:"changed"`
	Created   int `json:"created"`
	Updated   int `json:"updated"`
	Recreated int `json:"recreated"`
	// Bookkeeping counts the children whose bookkeeping alone is patched.
	Bookkeeping int `json:"bookkeeping,omitempty"`
	Deleted     int `json:"deleted"`
	Released    int `json:"released"`
	Failing     int `json:"failing"`
	// ReadinessChanged counts the parents whose Ready condition changes because children with no
	// readyWhen are judged by their kind (Parent.Readiness).
	ReadinessChanged int `json:"readinessChanged,omitempty"`
}

// Run plans the candidate against every live parent. It fails only when the cluster cannot be
// read; a parent that would fail is in the Plan.
func Run(ctx context.Context, in Input) (*Plan, error) {
	w, err := readWorld(ctx, in)
	if err != nil {
		return nil, err
	}
	planned := planParents(ctx, in, w)
	redact(planned, &w.secrets)
	p := &Plan{Policy: in.Candidate.Name(), Parents: []Parent{}}
	p.Totals.Parents = len(planned)
	for _, parent := range planned {
		if parent.Changed() {
			p.Parents = append(p.Parents, parent)
			p.Totals.add(parent)
		}
	}
	p.Versions = versionChange(in, len(w.parents))
	klog.FromContext(ctx).V(2).Info("Planned", "policy", p.Policy, "parents", p.Totals.Parents, "changed", p.Totals.Changed)
	return p, nil
}

// planParents plans every parent, Workers at a time, and returns them in the order of w.parents.
func planParents(ctx context.Context, in Input, w *world) []Parent {
	workers := in.Workers
	if workers <= 0 {
		workers = 8
	}
	out := make([]Parent, len(w.parents))
	next := make(chan int)
	var wg sync.WaitGroup
	for range min(workers, len(w.parents)) {
		wg.Go(func() {
			for i := range next {
				out[i] = planParent(ctx, in, w, w.parents[i])
			}
		})
	}
	for i := range w.parents {
		next <- i
	}
	close(next)
	wg.Wait()
	return out
}

func (t *Totals) add(p Parent) {
	t.Changed++
	if p.Failing() {
		t.Failing++
	}
	if p.Readiness != nil {
		t.ReadinessChanged++
	}
	for _, c := range p.Children {
		switch c.Action {
		case decide.Create:
			t.Created++
		case decide.Update:
			t.Updated++
		case decide.Recreate:
			t.Recreated++
		case decide.UpdateBookkeeping:
			t.Bookkeeping++
		case decide.Delete:
			t.Deleted++
		case decide.Release:
			t.Released++
		}
	}
}

// describe names an object as kubectl does: Kind namespace/name.
func describe(obj *unstructured.Unstructured) string {
	return obj.GetKind() + " " + namespaced(obj.GetNamespace(), obj.GetName())
}

func namespaced(namespace, name string) string {
	if namespace == "" {
		return name
	}
	return namespace + "/" + name
}

// sortParents orders parents by namespace and name.
func sortParents(objs []*unstructured.Unstructured) {
	slices.SortFunc(objs, func(a, b *unstructured.Unstructured) int {
		return strings.Compare(namespaced(a.GetNamespace(), a.GetName()), namespaced(b.GetNamespace(), b.GetName()))
	})
}

// versionChange says what the candidate does to the parent's versions; nil when it declares one.
func versionChange(in Input, parents int) *VersionChange {
	c := in.Candidate
	ps := c.Policy.Spec.ParentSchema
	if c.Conversion == nil || ps == nil {
		return nil
	}
	out := &VersionChange{Served: in.Mapper.Versions(c.Parent.GVR.GroupResource()), Storage: cmp.Or(ps.StorageVersion, c.Conversion.Hub)}
	out.Declared = append(out.Declared, c.Conversion.Hub)
	for _, v := range ps.Versions {
		if v.IsServed() {
			out.Declared = append(out.Declared, v.Name)
		}
	}
	if storageOf(in.Running) != out.Storage {
		out.Migrated = parents
	}
	return out
}

// storageOf is the storage version a running policy declares: its parentSchema's, else its
// parent's version; "" for none.
func storageOf(c *policy.Compiled) string {
	if c == nil {
		return ""
	}
	if ps := c.Policy.Spec.ParentSchema; ps != nil && ps.StorageVersion != "" {
		return ps.StorageVersion
	}
	return c.Parent.GVR.Version
}
