package policy

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"metacel.dev/metacel/runtime/fieldpath"
)

// The lints of this file find child templates the API server accepts but that do not do what
// they say: a Secret key whose value the API server drops, an HPA aimed at no child, a workload
// whose replicas a sync writes back over its HPA's. Each looks at what a template writes
// literally, or at ${} templates by their text: it cannot tell what a template evaluates to.

// scaledKinds are the workload kinds (group apps) an HPA child of a policy may scale and whose
// template may set spec.replicas.
var scaledKinds = []string{"Deployment", "StatefulSet", "ReplicaSet"}

// namedChild is a template child's kind and metadata.name as the template writes them.
type namedChild struct {
	index      int
	id         string
	apiVersion string
	kind       string
	name       string
}

// namedChildren returns the policy's template children with a literal kind; known is false when
// some child's kind cannot be told before render (an expression child, a ${} kind), so that a
// reference that matches none of them may still name one.
func namedChildren(p *CompositePolicy) (out []namedChild, known bool) {
	known = true
	for i, child := range p.Spec.Children {
		apiVersion, _ := child.Template["apiVersion"].(string)
		kind, _ := child.Template["kind"].(string)
		if child.Template == nil || kind == "" || strings.Contains(kind, "${") {
			known = false
			continue
		}
		meta, _ := child.Template["metadata"].(map[string]any)
		name, _ := meta["name"].(string)
		out = append(out, namedChild{index: i, id: child.ID, apiVersion: apiVersion, kind: kind, name: name})
	}
	return out, known
}

// sameName reports whether two names as templates write them are the same: equal literals, or
// the same ${} template but for spaces (a name has none).
func sameName(a, b string) bool {
	return strings.Join(strings.Fields(a), "") == strings.Join(strings.Fields(b), "")
}

// secretFindings are the findings of Lint about Secret children: a key set in both data and
// stringData, whose data value the API server drops (stringData is written over data), when both
// are maps the template writes (a map key is never a template).
func secretFindings(c *Compiled) []Finding {
	var out []Finding
	for i, child := range c.Policy.Spec.Children {
		if kind, _ := child.Template["kind"].(string); kind != "Secret" || child.Template["apiVersion"] != "v1" {
			continue
		}
		data, _ := child.Template["data"].(map[string]any)
		stringData, _ := child.Template["stringData"].(map[string]any)
		for _, key := range slices.Sorted(maps.Keys(data)) {
			if _, both := stringData[key]; !both {
				continue
			}
			path := fieldpath.Field(fieldpath.Index("spec.children", i)+".template.data", key)
			out = append(out, c.finding(path, "key %q is in both data and stringData: the API server writes stringData's value over "+
				"data's, so this value is lost without an error; keep the key in one of them (stringData for text)", key))
		}
	}
	return out
}

// scaleTarget is what an HPA child of a policy scales: the kind and name of its scaleTargetRef,
// as its template writes them; kind is literal.
type scaleTarget struct {
	hpa        namedChild
	kind, name string
}

// scaleTargets returns the targets of the policy's HPA children whose scaleTargetRef has a
// literal kind and a name.
func scaleTargets(p *CompositePolicy, children []namedChild) []scaleTarget {
	var out []scaleTarget
	for _, hpa := range children {
		if hpa.kind != "HorizontalPodAutoscaler" || !strings.HasPrefix(hpa.apiVersion, "autoscaling/") {
			continue
		}
		spec, _ := p.Spec.Children[hpa.index].Template["spec"].(map[string]any)
		ref, _ := spec["scaleTargetRef"].(map[string]any)
		kind, _ := ref["kind"].(string)
		name, _ := ref["name"].(string)
		if kind == "" || name == "" || strings.Contains(kind, "${") {
			continue
		}
		out = append(out, scaleTarget{hpa: hpa, kind: kind, name: name})
	}
	return out
}

// scaleFindings are the findings of Lint about HPA children and what they scale: an HPA whose
// scaleTargetRef names no child of the policy (when every child's kind is known), and a workload
// child an HPA scales whose template still sets spec.replicas.
func scaleFindings(c *Compiled) []Finding {
	children, known := namedChildren(c.Policy)
	targets := scaleTargets(c.Policy, children)
	var out []Finding
	for _, t := range targets {
		if known { // else the target may be a child no lint can name
			out = append(out, c.unscaledTarget(t, children)...)
		}
	}
	for _, w := range children {
		if slices.Contains(scaledKinds, w.kind) && strings.HasPrefix(w.apiVersion, "apps/") {
			out = append(out, c.replicasUnderHPA(w, targets)...)
		}
	}
	return out
}

// unscaledTarget is the finding of an HPA whose target is no child of the policy: none of its
// kind, or none of that kind named as the target is.
func (c *Compiled) unscaledTarget(t scaleTarget, children []namedChild) []Finding {
	ref := fieldpath.Index("spec.children", t.hpa.index) + ".template.spec.scaleTargetRef"
	var names []string
	for _, child := range children {
		if child.kind != t.kind {
			continue
		}
		if sameName(child.name, t.name) {
			return nil
		}
		names = append(names, fmt.Sprintf("%q", child.name))
	}
	if names == nil {
		return []Finding{c.finding(ref+".kind", "the HPA scales %s %q, but the policy has no %s child: it scales an object the policy "+
			"does not write (or nothing); name a workload child's kind and name, as its template writes them", t.kind, t.name, t.kind)}
	}
	return []Finding{c.finding(ref+".name", "the HPA scales %s %q, but no %s child of the policy is named so (%s): it scales an object "+
		"the policy does not write (or nothing); write the child's name as its template does, the same literal or the same ${} template",
		t.kind, t.name, t.kind, strings.Join(names, ", "))}
}

// replicasUnderHPA is the finding of a workload child that an HPA child scales and whose
// template sets spec.replicas.
func (c *Compiled) replicasUnderHPA(w namedChild, targets []scaleTarget) []Finding {
	spec, _ := c.Policy.Spec.Children[w.index].Template["spec"].(map[string]any)
	if spec["replicas"] == nil {
		return nil
	}
	for _, t := range targets {
		if t.kind == w.kind && sameName(t.name, w.name) {
			path := fieldpath.Index("spec.children", w.index) + ".template.spec.replicas"
			return []Finding{c.finding(path, "the HPA child %q scales this %s, yet its template sets spec.replicas: every sync writes "+
				"it back over the replicas the HPA chose; leave spec.replicas out and let the HPA own it (docs/cookbook.md, "+
				"\"Handing replicas over to an HPA\": how to drop it from a running policy without a dip to 1 replica)", t.hpa.id, w.kind)}
		}
	}
	return nil
}

// maxStatefulSetName is the longest name of a StatefulSet whose Pods can be labelled with their
// revision: controller-revision-hash is the name, "-" and a hash of up to 10 characters, and a
// label value holds at most 63.
const maxStatefulSetName = 52

// jobFindings are the findings of Lint about workloads the API server accepts but that do not do
// what the policy means: a Job with ttlSecondsAfterFinished, which the TTL controller deletes
// once finished and the next sync creates again (it runs again, after every TTL); a StatefulSet
// whose literal name is longer than maxStatefulSetName, whose Pods are never created.
func jobFindings(c *Compiled) []Finding {
	var out []Finding
	for i, child := range c.Policy.Spec.Children {
		apiVersion, _ := child.Template["apiVersion"].(string)
		kind, _ := child.Template["kind"].(string)
		spec, _ := child.Template["spec"].(map[string]any)
		meta, _ := child.Template["metadata"].(map[string]any)
		name, _ := meta["name"].(string)
		path := fieldpath.Index("spec.children", i) + ".template"
		switch {
		case apiVersion == "batch/v1" && kind == "Job" && spec["ttlSecondsAfterFinished"] != nil:
			out = append(out, c.finding(path+".spec.ttlSecondsAfterFinished", "the TTL controller deletes the Job once it has finished, "+
				"and the next sync creates it again: it runs again after every TTL; leave ttlSecondsAfterFinished out (the Job goes with its parent)"))
		case apiVersion == "apps/v1" && kind == "StatefulSet" && !strings.Contains(name, "${") && len(name) > maxStatefulSetName:
			out = append(out, c.finding(path+".metadata.name", "%q has %d characters: its Pods' label controller-revision-hash (the name, \"-\" and a hash) "+
				"would exceed 63, and no Pod is ever created; use at most %d", name, len(name), maxStatefulSetName))
		}
	}
	return out
}
