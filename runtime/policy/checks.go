package policy

import (
	"strings"

	"k8s.io/apimachinery/pkg/runtime/schema"

	"metacel.dev/metacel/runtime/expr"
	"metacel.dev/metacel/runtime/fieldpath"
	"metacel.dev/metacel/runtime/kinds"
)

// checker rejects at load what the API server or the run time would refuse for every parent,
// where what decides it is written literally in the policy: a template's kind and the fields the
// runtime owns (reserved.go), values that are no base64, the template against its kind's schema
// (childschema.go) and Kubernetes' validation of the kind (apichecks.go), where a child lives
// against the parent's scope and the confinement (placement.go), two children naming one object,
// the status against the parent's status schema (statusschema.go), and the conditions' literal
// types and reasons (conditions.go). It compiles nothing: the compiler calls it as it compiles
// each part, with the environment that types the part's ${} values, and both report to one list.
type checker struct {
	*loadErrors
	spec *Spec
	m    kinds.Mapper
	// scopeKnown is true when the parent's scope is known: served, or declared by parentSchema
	scopeKnown bool
}

// template checks a template child of a literal kind: the kind is allowed, the fields the runtime
// owns are left alone, base64 values are base64, and the object fits its kind's schema and, when it
// does, Kubernetes' validation of the kind. env types its ${} values.
func (c *checker) template(tmpl map[string]any, path string, env *expr.Env, allowed map[schema.GroupVersionResource]ChildResourceInfo) {
	c.kind(tmpl, path, allowed)
	c.reserved(tmpl, path)
	c.base64(tmpl, path)
	s, ok := schemaOfChild(c.m, tmpl, allowed)
	if !ok {
		return
	}
	before := len(c.errs)
	c.childSchema(tmpl, path, env, s)
	if len(c.errs) == before { // validation reads an object that fits its schema
		c.apiValidation(tmpl, path, s)
	}
}

// sameObject rejects two template children that name one object literally (group, kind,
// namespace and name, none a ${} template): every render would give the object twice and fail.
func (c *checker) sameObject() {
	first := map[string]string{}
	for i, ch := range c.spec.Children {
		key, ok := literalObject(ch.Template)
		if !ok || ch.IncludeWhen != "" || ch.ForEach != "" { // includeWhen may keep two apart (one Service or the other)
			continue
		}
		path := fieldpath.Index("spec.children", i)
		if at, seen := first[key]; seen {
			c.errorf(path+".template.metadata.name", "names the same object as %s: each render would give it twice; give each child its own name", at)
			continue
		}
		first[key] = path
	}
}

// literalObject identifies the object a template names literally: its group, kind, namespace
// and name, when none is a ${} template.
func literalObject(tmpl map[string]any) (string, bool) {
	apiVersion, _ := tmpl["apiVersion"].(string)
	kind, _ := tmpl["kind"].(string)
	meta, _ := tmpl["metadata"].(map[string]any)
	name, _ := meta["name"].(string)
	namespace, _ := meta["namespace"].(string)
	gv, err := schema.ParseGroupVersion(apiVersion)
	if err != nil || kind == "" || name == "" || strings.Contains(kind+name+namespace, "${") {
		return "", false
	}
	return gv.Group + "/" + kind + "/" + namespace + "/" + name, true
}

// kind rejects at load a template whose literal apiVersion and kind are not an allowed
// child resource.
func (c *checker) kind(tmpl map[string]any, path string, allowed map[schema.GroupVersionResource]ChildResourceInfo) {
	apiVersion, ok1 := tmpl["apiVersion"].(string)
	kind, ok2 := tmpl["kind"].(string)
	if !ok1 || !ok2 || strings.Contains(apiVersion, "${") || strings.Contains(kind, "${") {
		return
	}
	gv, err := schema.ParseGroupVersion(apiVersion)
	if err != nil {
		c.errorf(path+".apiVersion", "%q is not a valid apiVersion", apiVersion)
		return
	}
	if why := kinds.Misnamed(c.m, gv.WithKind(kind)); why != "" {
		c.errorf(path+".kind", "%s", why)
		return
	}
	info := kinds.LookupKind(c.m, gv.WithKind(kind))
	if _, ok := allowed[info.GVR]; !ok {
		c.errorf(path+".kind", "%s %s (resource %q) is not listed in spec.childResources: add {apiVersion: %s, resource: %s}",
			apiVersion, kind, info.GVR.Resource, apiVersion, info.GVR.Resource)
	}
}
