package decide

import (
	"fmt"
	"slices"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/klog/v2"

	"metacel.dev/metacel/runtime/contract"
	"metacel.dev/metacel/runtime/policy"
)

// Removals are the steps that remove objs, children of one parent going away (no longer
// desired, or all the children of a deleted parent), in the reverse of the order children are
// applied in (policy.Compiled.Order): each is deleted or released as Removal says, but a child to
// be deleted that another child going away waits for (its After names it, directly or through
// others) waits (Wait) until that one is gone. going are the parent's other children going away
// (desired ones being deleted): they hold back what they wait for, and get no step. A child
// already being deleted gets no step. Waiting is level-based: the deletion of the one waited for
// brings the sync that deletes the next.
func Removals(objs, going []*unstructured.Unstructured, versions ...*policy.Compiled) []Step {
	all := append(slices.Clone(objs), going...)
	var steps []Step
	for _, obs := range objs {
		if obs.GetDeletionTimestamp() != nil {
			continue
		}
		s := Removal(obs, versions...)
		if s.Action == Delete {
			s.Foreground = waitsForOthers(obs, versions) && ownsObjects(obs)
			if blocker, why := heldBackBy(obs, all, versions); blocker != nil {
				s = Step{Action: Wait, Observed: obs, Blocker: blocker, Why: fmt.Sprintf(
					"no longer desired; deleted once %s %s is gone: %s (children are deleted in the reverse of the order they are applied in)",
					blocker.GetKind(), klog.KObj(blocker), why)}
			}
		}
		steps = append(steps, s)
	}
	return steps
}

// Ordered reports whether the children of c have an order: some child waits for another.
func Ordered(c *policy.Compiled) bool {
	for i := range c.Children {
		if len(c.Children[i].After) > 0 {
			return true
		}
	}
	return false
}

// heldBackBy returns the object of others that waits for obs, nearest first (one that reads it
// before one that waits for it through others), and how it waits; nil when none does. Children
// of one entry (forEach) do not wait for each other.
func heldBackBy(obs *unstructured.Unstructured, others []*unstructured.Unstructured, versions []*policy.Compiled) (*unstructured.Unstructured, string) {
	id := childID(obs)
	if id == "" {
		return nil, ""
	}
	var best *unstructured.Unstructured
	bestHops, bestWhy := 0, ""
	for _, o := range others {
		oid := childID(o)
		if oid == "" || oid == id {
			continue
		}
		hops, why := waitsFor(versions, oid, id)
		if hops > 0 && (best == nil || hops < bestHops) {
			best, bestHops, bestWhy = o, hops, why
		}
	}
	return best, bestWhy
}

// waitsForOthers reports whether the entry of obj, in the first of versions that lists it, waits
// for other children: those wait for it, when they go too, until it is gone.
func waitsForOthers(obj *unstructured.Unstructured, versions []*policy.Compiled) bool {
	id := childID(obj)
	c := firstListing(versions, id)
	if c == nil {
		return false
	}
	for i := range c.Children {
		if c.Children[i].ID == id {
			return len(c.Children[i].After) > 0
		}
	}
	return false
}

// ownerKinds are the built-in kinds whose objects own others that the garbage collector deletes
// after them (their Pods, ReplicaSets or Jobs), by group: deleted in the foreground, such an
// object is gone only once those are.
var ownerKinds = map[string][]string{
	"":      {"ReplicationController"},
	"apps":  {"Deployment", "ReplicaSet", "StatefulSet", "DaemonSet"},
	"batch": {"Job", "CronJob"},
}

// ownsObjects reports whether obj is of a kind that owns objects (ownerKinds).
func ownsObjects(obj *unstructured.Unstructured) bool {
	gvk := obj.GroupVersionKind()
	return slices.Contains(ownerKinds[gvk.Group], gvk.Kind)
}

// childID is the id of the entry an object is a child of, as its label says.
func childID(obj *unstructured.Unstructured) string {
	return obj.GetLabels()[contract.LabelChildID]
}

// waitsFor says whether the child entry dependent waits for the entry id, in the first of
// versions that lists dependent: how many steps away (1: directly; 0: not at all) and how.
func waitsFor(versions []*policy.Compiled, dependent, id string) (int, string) {
	c := firstListing(versions, dependent)
	if c == nil {
		return 0, ""
	}
	after := make(map[string][]policy.Dependency, len(c.Children))
	for i := range c.Children {
		after[c.Children[i].ID] = c.Children[i].After
	}
	// breadth first, through what dependent waits for
	seen := map[string]bool{dependent: true}
	frontier := []string{dependent}
	for hops := 1; len(frontier) > 0; hops++ {
		var next []string
		for _, from := range frontier {
			for _, d := range after[from] {
				switch {
				case d.ID == id && from == dependent:
					return hops, dependent + ": " + d.Why
				case d.ID == id:
					return hops, fmt.Sprintf("%s waits for %s through %s", dependent, id, from)
				}
				if !seen[d.ID] {
					seen[d.ID] = true
					next = append(next, d.ID)
				}
			}
		}
		frontier = next
	}
	return 0, ""
}

// firstListing is the first of versions with a child entry of id; nil when none has.
func firstListing(versions []*policy.Compiled, id string) *policy.Compiled {
	for _, c := range versions {
		if c == nil {
			continue
		}
		for i := range c.Children {
			if c.Children[i].ID == id {
				return c
			}
		}
	}
	return nil
}
