package policy

import (
	"fmt"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/runtime/schema"

	"metacel.dev/metacel/runtime/fieldpath"
	"metacel.dev/metacel/runtime/kinds"
)

// placement rejects at load a template child that the run time would reject for every
// parent (render's place, reason InvalidChild), when what decides it is written literally: its
// namespace, its kind's scope and the parent's scope. A scope the mapper only guessed decides
// nothing, nor does a ${} template or an expression child, whose object is known only at run time.
func (c *checker) placement(ch Child, path string, parent kinds.Info) {
	if ch.Template == nil {
		return
	}
	nsPath := path + ".template.metadata.namespace"
	ns := literalNamespace(ch.Template)
	parentNamespaced := parent.Namespaced && c.scopeKnown
	parentCluster := !parent.Namespaced && c.scopeKnown
	child, kindKnown := templateKind(c.m, ch.Template)
	if kindKnown && !child.Namespaced {
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
	if kindKnown && parentCluster && noNamespace(ch.Template) {
		c.errorf(metadataPath(ch.Template, path+".template"), "%s %s is namespaced and the parent (%s) is cluster-scoped, so it has no namespace to default to: set metadata.namespace (a literal, or \"${...}\" from the parent)",
			child.GVK().GroupVersion().String(), child.Kind, parentName(parent))
	}
	if ns == "" || !parentNamespaced {
		return
	}
	fix := c.confinementFix("childNamespaces", ns)
	if !ch.CrossNamespace {
		also := ""
		if fix != "" {
			also = " and " + fix
		}
		c.errorf(nsPath, "%q is a literal namespace, but the parent (%s) is namespaced and its children live in the parent's namespace: remove metadata.namespace (it defaults to the parent's), or set crossNamespace: true on this child%s to write across namespaces (it is then cleaned up by the parent's finalizer)",
			ns, parentName(parent), also)
		return
	}
	if fix != "" && kindKnown {
		c.errorf(nsPath, "%q is a literal namespace, but the parent (%s) is namespaced and writes only into its own namespace unless spec.confinement.childNamespaces allows more, so every sync of a parent in another namespace fails with NamespaceNotAllowed: %s",
			ns, parentName(parent), fix)
	}
}

// confinementFix returns, for a literal namespace that the policy's confinement rule (childNamespaces
// or relatedNamespaces) can never allow, how to allow it, and "" when the rule may allow it: it
// names it, names any ("*"), decides by expression or leaves it to a consent label.
func (c *checker) confinementFix(rule, ns string) string {
	var r *NamespaceRule
	if conf := c.spec.Confinement; conf != nil {
		if rule == "childNamespaces" {
			r = conf.ChildNamespaces
		} else {
			r = conf.RelatedNamespaces
		}
	}
	switch {
	case r == nil:
		return fmt.Sprintf("allow the namespace in spec.confinement.%s (e.g. %s: {names: [%s]})", rule, rule, ns)
	case r.Expression != "" || len(r.Names) == 0 || slices.Contains(r.Names, "*") || slices.Contains(r.Names, ns):
		return ""
	}
	return fmt.Sprintf("add %q to spec.confinement.%s.names", ns, rule)
}

// relatedNamespaces rejects at load a related object read from a literal namespace that a
// namespaced parent may never reach: its confinement.relatedNamespaces does not allow it.
func (c *checker) relatedNamespaces(parent kinds.Info) {
	if !parent.Namespaced || !c.scopeKnown {
		return
	}
	for i, r := range c.spec.Related {
		if r.Namespace == "" || strings.Contains(r.Namespace, "${") {
			continue
		}
		if info := kinds.LookupResource(c.m, gvr(r.APIVersion, r.Resource)); info.Guessed || !info.Namespaced {
			continue // a cluster-scoped object is not confined
		}
		if fix := c.confinementFix("relatedNamespaces", r.Namespace); fix != "" {
			c.errorf(fieldpath.Index("spec.related", i)+".namespace", "%q is a literal namespace, but the parent (%s) is namespaced and reads only its own namespace unless spec.confinement.relatedNamespaces allows more, "+
				"so every sync of a parent in another namespace fails with NamespaceNotAllowed: %s, or remove namespace (it defaults to the parent's)", r.Namespace, parentName(parent), fix)
		}
	}
}

// noNamespace reports whether a template gives no namespace: none, or an empty literal.
func noNamespace(tmpl map[string]any) bool {
	meta, _ := tmpl["metadata"].(map[string]any)
	if meta == nil {
		_, isExpr := tmpl["metadata"].(string)
		return !isExpr
	}
	ns, ok := meta["namespace"]
	return !ok || ns == nil || ns == ""
}

// metadataPath is the path of a template's metadata, or of the template when it has none.
func metadataPath(tmpl map[string]any, path string) string {
	if _, ok := tmpl["metadata"]; ok {
		return path + ".metadata"
	}
	return path
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
func templateKind(m kinds.Mapper, tmpl map[string]any) (info kinds.Info, ok bool) {
	apiVersion, ok1 := tmpl["apiVersion"].(string)
	kind, ok2 := tmpl["kind"].(string)
	if !ok1 || !ok2 || strings.Contains(apiVersion, "${") || strings.Contains(kind, "${") {
		return info, false
	}
	gv, err := schema.ParseGroupVersion(apiVersion)
	if err != nil {
		return info, false
	}
	info = kinds.LookupKind(m, gv.WithKind(kind))
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
