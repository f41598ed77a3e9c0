package policy

import (
	"strings"

	"k8s.io/apimachinery/pkg/runtime/schema"

	"metacel.dev/metacel/runtime/kinds"
)

// checkPlacement rejects at load a template child that the run time would reject for every
// parent (render's place, reason InvalidChild), when what decides it is written literally: its
// namespace, its kind's scope and the parent's scope. A scope the mapper only guessed decides
// nothing, nor does a ${} template or an expression child, whose object is known only at run time.
func (c *compiler) checkPlacement(ch Child, path string, parent kinds.Info) {
	if ch.Template == nil {
		return
	}
	nsPath := path + ".template.metadata.namespace"
	ns := literalNamespace(ch.Template)
	parentNamespaced := parent.Namespaced && !parent.Guessed
	if child, ok := c.templateKind(ch.Template); ok && !child.Namespaced {
		kind := child.GVK().GroupVersion().String() + " " + child.Kind
		if ns != "" {
			c.errorf(nsPath, "%q: %s is cluster-scoped and cannot have a namespace: remove metadata.namespace", ns, kind)
		}
		if parentNamespaced && !ch.CrossNamespace {
			c.errorf(path+".crossNamespace", "%s is cluster-scoped and the parent (%s) is namespaced: set crossNamespace: true on this child to allow it (it is then cleaned up by the parent's finalizer)",
				kind, parentName(parent))
		}
		return
	}
	if ns != "" && parentNamespaced && !ch.CrossNamespace {
		c.errorf(nsPath, "%q is a literal namespace, but the parent (%s) is namespaced and its children live in the parent's namespace: remove metadata.namespace (it defaults to the parent's), or set crossNamespace: true on this child to write across namespaces (it is then cleaned up by the parent's finalizer)",
			ns, parentName(parent))
	}
}

// literalNamespace returns a template's metadata.namespace when it is a non-empty string with no
// ${} template in it, and "" otherwise.
func literalNamespace(tmpl map[string]any) string {
	meta, _ := tmpl["metadata"].(map[string]any)
	ns, _ := meta["namespace"].(string)
	if strings.Contains(ns, "${") {
		return ""
	}
	return ns
}

// templateKind resolves a template's literal apiVersion and kind; ok is false when either is a
// ${} template or invalid, or when the mapper does not know the kind (its scope would be a guess).
func (c *compiler) templateKind(tmpl map[string]any) (info kinds.Info, ok bool) {
	apiVersion, ok1 := tmpl["apiVersion"].(string)
	kind, ok2 := tmpl["kind"].(string)
	if !ok1 || !ok2 || strings.Contains(apiVersion, "${") || strings.Contains(kind, "${") {
		return info, false
	}
	gv, err := schema.ParseGroupVersion(apiVersion)
	if err != nil {
		return info, false
	}
	info = kinds.LookupKind(c.m, gv.WithKind(kind))
	return info, !info.Guessed
}

// parentName names the parent resource in messages: its kind, or its resource when the kind is
// not known.
func parentName(parent kinds.Info) string {
	if parent.Kind != "" {
		return parent.Kind
	}
	return parent.GVR.GroupResource().String()
}
