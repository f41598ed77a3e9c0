package tree

import (
	"context"
	"fmt"
	"slices"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"metacel.dev/metacel/runtime/apply"
	"metacel.dev/metacel/runtime/clusterread"
	"metacel.dev/metacel/runtime/contract"
	"metacel.dev/metacel/runtime/kinds"
	"metacel.dev/metacel/runtime/policy"
)

// MaxDepth is the most levels of children's own trees a tree shows beneath a parent.
const MaxDepth = 8

// nesting finds the running policy of which a child is the parent, for the trees of children
// that are parents themselves. It reads the policy namespace once per tree.
type nesting struct {
	// policies holds, by parent resource, the name of the policy that runs for it: of two, the
	// first of the units in name order, the runtime's last tie-break (the policy status of one the
	// runtime rejected says PolicyConflict).
	policies map[schema.GroupResource]string
	// running caches the running policies found, by name; a nil value with its error in failed.
	running map[string]*clusterread.Running
	failed  map[string]error
}

// newNesting reads which running policy claims each parent resource.
func newNesting(ctx context.Context, in Input) (*nesting, error) {
	units, err := clusterread.PolicyUnits(ctx, in.Kube, in.ReservedNamespace)
	if err != nil {
		return nil, fmt.Errorf("read the running policies, to show the children that are parents: %w", err)
	}
	n := &nesting{policies: map[schema.GroupResource]string{}, running: map[string]*clusterread.Running{}, failed: map[string]error{}}
	for _, u := range units {
		docs, _ := policy.Parse(u.Name, u.Data)
		for _, d := range docs {
			if d.Policy == nil {
				continue
			}
			gv, err := schema.ParseGroupVersion(d.Policy.Spec.ParentResource.APIVersion)
			if err != nil {
				continue
			}
			gr := schema.GroupResource{Group: gv.Group, Resource: d.Policy.Spec.ParentResource.Resource}
			if _, claimed := n.policies[gr]; !claimed {
				n.policies[gr] = d.Policy.Metadata.Name
			}
		}
	}
	return n, nil
}

// nest gives each child of t that is the parent of a running policy its own tree, in.Depth
// levels down. observed are the children as the API server holds them (nil for a missing one),
// above the UIDs of the parents shown above t's, which are not shown again.
func (n *nesting) nest(ctx context.Context, in Input, t *Tree, observed []*unstructured.Unstructured, above []types.UID) {
	above = append(slices.Clip(above), in.Parent.GetUID())
	for i, obj := range observed {
		if obj == nil {
			continue
		}
		name, running, err := n.policyOf(ctx, in, obj)
		switch {
		case err != nil:
			t.Children[i].Tree = unbuilt(obj, name, err)
			continue
		case running == nil:
			continue
		case slices.Contains(above, obj.GetUID()):
			t.Children[i].ShownAbove = true
			continue
		}
		t.Children[i].Tree = n.childTree(ctx, in, running, obj, above)
	}
}

// childTree is the tree of a child that is a parent of running, one level less deep than its
// parent's.
func (n *nesting) childTree(ctx context.Context, in Input, running *clusterread.Running, obj *unstructured.Unstructured, above []types.UID) *Tree {
	parent, err := asParentOf(ctx, in, running.Policy, obj)
	if err != nil {
		return unbuilt(obj, running.Policy.Name(), err)
	}
	sub := in
	sub.Policy, sub.Source, sub.Parent, sub.Depth = running.Policy, running.Source, parent, in.Depth-1
	t, observed, err := buildOne(ctx, sub)
	if err != nil {
		return unbuilt(obj, running.Policy.Name(), err)
	}
	if sub.Depth > 0 {
		n.nest(ctx, sub, t, observed, above)
	}
	return t
}

// policyOf is the running policy of which obj is a parent, and its name: the one that claims its
// resource, if its label selector selects obj; nil when there is none.
func (n *nesting) policyOf(ctx context.Context, in Input, obj *unstructured.Unstructured) (string, *clusterread.Running, error) {
	gvk := obj.GroupVersionKind()
	gvr := kinds.LookupKind(in.Mapper, gvk).GVR
	if r, ok := in.Policy.ChildResourceOfKind(gvk); ok {
		gvr = r.GVR
	}
	name, ok := n.policies[gvr.GroupResource()]
	if !ok {
		return "", nil, nil
	}
	running, err := n.find(ctx, in, name)
	if err != nil || !selects(running.Policy, obj) {
		return name, nil, err
	}
	return name, running, nil
}

// find finds the running policy named name, once.
func (n *nesting) find(ctx context.Context, in Input, name string) (*clusterread.Running, error) {
	if r, ok := n.running[name]; ok {
		return r, n.failed[name]
	}
	r, err := FindPolicy(ctx, in.Kube, in.ReservedNamespace, name, in.Mapper)
	n.running[name], n.failed[name] = r, err
	return r, err
}

// selects reports whether a policy's label selector selects obj as a parent.
func selects(c *policy.Compiled, obj *unstructured.Unstructured) bool {
	if c.ParentSelector == nil {
		return true
	}
	s, err := metav1.LabelSelectorAsSelector(c.ParentSelector)
	return err == nil && s.Matches(labels.Set(obj.GetLabels()))
}

// asParentOf is obj as the policy c reads its parents: at c's version of the resource, which the
// API server converts obj to when the child's version differs.
func asParentOf(ctx context.Context, in Input, c *policy.Compiled, obj *unstructured.Unstructured) (*unstructured.Unstructured, error) {
	if obj.GroupVersionKind().GroupVersion() == c.Parent.GVR.GroupVersion() {
		return obj, nil
	}
	ctx, cancel := context.WithTimeout(ctx, apply.RequestTimeout)
	defer cancel()
	got, err := in.Client.Resource(c.Parent.GVR).Namespace(obj.GetNamespace()).Get(ctx, obj.GetName(), metav1.GetOptions{})
	if err != nil {
		return nil, fmt.Errorf("read %s %q as policy %q's parent: %w", c.Parent.GVR.Resource, obj.GetName(), c.Name(), err)
	}
	return got, nil
}

// unbuilt is the tree of a child that is a parent of policy but whose own tree cannot be read:
// its conditions and why.
func unbuilt(obj *unstructured.Unstructured, policy string, err error) *Tree {
	t := &Tree{Parent: objectOf(obj), Policy: policy, Conditions: conditionsOf(obj), Error: err.Error(), Children: []Child{}}
	t.Ready = conditionIs(t.Conditions, contract.ConditionReady, "True")
	return t
}
