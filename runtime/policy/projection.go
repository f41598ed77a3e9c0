package policy

import (
	"slices"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"metacel.dev/metacel/runtime/kinds"
	"metacel.dev/metacel/runtime/projection"
	"metacel.dev/metacel/runtime/readiness"
)

// keepChildFields sets, on each child resource, the fields its cache keeps of the children
// (ChildResourceInfo.Keep): what a sync reads of them beyond their metadata. It runs after every
// expression of the policy has compiled, from what they were recorded to read (expr.Reads):
//   - what each template of the resource sets, which the write decision compares with what is,
//     also where the API server stores it under another name (storedAs);
//   - what readiness by kind reads, for a child with no readyWhen, and what every readyWhen reads;
//   - what expressions read of children.<id> for each id of the resource;
//   - what the runtime reads of such a child itself (runtimeReads);
//   - every key field of the keyed lists the templates write into (ports by port and protocol),
//     which the write decision matches items by, those a template leaves to their default too.
//
// Every child resource keeps its children whole when an expression reads children otherwise than
// by id, or when a child's resource is not known from its template (a ${} kind, an expression
// child); a resource no template makes keeps them whole too.
func (c *compiler) keepChildFields(out *Compiled) {
	byResource := map[schema.GroupVersionResource]*projection.Fields{}
	known := true
	for i := range out.Children {
		ch := &out.Children[i]
		info, ok := templateKind(c.m, c.spec.Children[i].Template)
		if !ok || ch.Template == nil || ch.Expression != nil {
			known = false
			break
		}
		gvr := info.GVR
		keep := byResource[gvr]
		if keep == nil {
			keep = &projection.Fields{}
			byResource[gvr] = keep
		}
		keep.Add(storedAs(info.GVK().GroupKind(), ch.Template.Fields())).Add(c.reads.ChildFields(ch.ID)).Add(c.reads.ReadyWhenFields()).
			Add(runtimeReadsOf(gvr.GroupResource()))
		if s, ok := schemaOfChild(c.m, c.spec.Children[i].Template, out.ChildResources); ok {
			for _, key := range s.ListKeyFields(c.spec.Children[i].Template) {
				keep.Keep(key...)
			}
		}
		if ch.ReadyWhen == nil {
			keep.Add(readiness.Fields())
		}
	}
	for gvr, info := range out.ChildResources {
		info.Keep = nil
		if keep := byResource[gvr]; known && keep != nil {
			info.Keep = keep.Body()
		}
		out.ChildResources[gvr] = info
	}
}

// Kept returns objects as the runtime's caches keep them: a child of one of the policy's child
// resources with only what its resource's Keep keeps (projection.Map, sharing the values kept),
// any other object as it is. The offline commands render what the runtime would read.
func (p *Compiled) Kept(objs []*unstructured.Unstructured) []*unstructured.Unstructured {
	out := make([]*unstructured.Unstructured, len(objs))
	for i, obj := range objs {
		out[i] = obj
		if res, ok := p.ChildResourceOfKind(obj.GroupVersionKind()); ok && !res.Keep.IsWhole() {
			out[i] = &unstructured.Unstructured{Object: projection.Map(obj.Object, res.Keep)}
		}
	}
	return out
}

// runtimeReads are the fields of a child that the runtime reads itself, whatever the policy:
// whether a Pod is bound (spec.nodeName: its deletion then takes its grace period, and a Recreate
// waits for it; controller.goneAtOnce), whether a ConfigMap or Secret is immutable (its data can
// then not change: decide.immutableFields), whether a Job is suspended and never started (its
// template's scheduling directives may then change: decide.schedulable).
var runtimeReads = map[schema.GroupResource]*projection.Fields{
	{Resource: "pods"}:                 (&projection.Fields{}).Keep("spec", "nodeName"),
	{Resource: "configmaps"}:           (&projection.Fields{}).Keep("immutable"),
	{Resource: "secrets"}:              (&projection.Fields{}).Keep("immutable"),
	{Group: "batch", Resource: "jobs"}: (&projection.Fields{}).Keep("spec", "suspend").Keep("status", "startTime"),
}

// runtimeReadsOf returns what the runtime reads itself of the children of gr: none but their
// identifying fields, which every cache keeps, for a resource runtimeReads does not list.
func runtimeReadsOf(gr schema.GroupResource) *projection.Fields {
	if f, ok := runtimeReads[gr]; ok {
		return f
	}
	return &projection.Fields{}
}

// storedAs adds to the fields a template sets of a built-in kind where the API server stores them
// under another name (render's storedForms, which the write decision compares with): a Secret's
// stringData in data, a pod spec's serviceAccount also in serviceAccountName and the other way.
// It returns f.
func storedAs(gk schema.GroupKind, f *projection.Fields) *projection.Fields {
	if gk == (schema.GroupKind{Kind: "Secret"}) {
		if _, ok := f.Field("stringData"); ok {
			f.Keep("data")
		}
	}
	if spec, ok := kinds.PodSpecPaths[gk]; ok {
		for _, name := range []string{"serviceAccount", "serviceAccountName"} {
			if partly(f, append(slices.Clip(spec), name)) {
				f.Keep(append(slices.Clip(spec), "serviceAccount")...).Keep(append(slices.Clip(spec), "serviceAccountName")...)
			}
		}
	}
	return f
}

// partly reports whether f keeps any part of the field at path.
func partly(f *projection.Fields, path []string) bool {
	n := f
	for _, name := range path {
		next, ok := n.Field(name)
		if !ok {
			return false
		}
		n = next
	}
	return true
}
