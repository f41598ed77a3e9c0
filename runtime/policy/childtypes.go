package policy

import (
	"sync"

	"k8s.io/apimachinery/pkg/runtime/schema"

	"metacel.dev/metacel/runtime/expr"
	"metacel.dev/metacel/runtime/kinds"
)

// builtinKindTypes holds the CEL type of each built-in kind typed so far, by GroupVersionKind:
// client-go's schema, which types them, is the same for the life of the process. A custom kind's
// type is built once per load (kindTyper), as its CRD may change between loads.
var builtinKindTypes sync.Map // schema.GroupVersionKind → *expr.ObjectType (nil: cannot type CEL)

// kindTyper types the ids of `children` and `related` by the kinds of their objects, for one
// load: each kind's CEL type is built once, from its CRD's schema or client-go's.
type kindTyper struct {
	m     kinds.Mapper
	types map[schema.GroupVersionKind]*expr.ObjectType
}

// childID declares a child entry's id in `children`: a list for a forEach or expression child,
// typed by the kind of a template child where it is known (childType).
func (c *kindTyper) childID(ch Child, allowed map[schema.GroupVersionResource]ChildResourceInfo) expr.ObjectID {
	id := expr.ObjectID{List: ch.ForEach != "" || ch.Expression != ""}
	if ch.Template != nil {
		id.Type = c.childType(ch.Template, allowed)
	}
	return id
}

// relatedID declares a related entry's id in `related`: a list with a selector, typed by the kind
// of its resource where the mapper knows it and its schema (a built-in kind, a custom resource
// with its CRD); dyn otherwise (a guessed resource, whose version related() reports when it is
// wrong).
func (c *kindTyper) relatedID(r Related) expr.ObjectID {
	id := expr.ObjectID{List: r.Selector != nil}
	info := kinds.LookupResource(c.m, gvr(r.APIVersion, r.Resource))
	if info.Guessed {
		return id
	}
	res := ChildResourceInfo{Info: info}
	if info.Schema == nil {
		res.ObjectSchema, _ = kinds.SchemaOf(info)
	}
	id.Type = c.kindType(res)
	return id
}

// childType returns the CEL type of a template's literal kind, when it is an allowed child
// resource the mapper knows and its schema is known; nil (dyn) otherwise: a ${} kind, a guessed
// resource, an aggregated API.
func (c *kindTyper) childType(tmpl map[string]any, allowed map[schema.GroupVersionResource]ChildResourceInfo) *expr.ObjectType {
	info, ok := templateKind(c.m, tmpl)
	if !ok {
		return nil
	}
	res, ok := allowed[info.GVR]
	if !ok || res.Guessed {
		return nil
	}
	return c.kindType(res)
}

// kindType returns the CEL type of a child or related resource's objects, built once per load: from its CRD's
// schema for a custom resource, from client-go's for a built-in kind (once per process); nil when
// neither is known or the schema cannot type CEL, which leaves the child dyn (the template's
// own check against the schema reports what is wrong with it).
func (c *kindTyper) kindType(res ChildResourceInfo) *expr.ObjectType {
	gvk := res.GVK()
	if t, ok := c.types[gvk]; ok {
		return t
	}
	var t *expr.ObjectType
	switch {
	case res.Schema != nil:
		t, _ = expr.NewObjectType(kindTypeName(gvk), res.Schema)
	case res.ObjectSchema != nil:
		t = builtinKindType(gvk, res)
	}
	if c.types == nil {
		c.types = map[schema.GroupVersionKind]*expr.ObjectType{}
	}
	c.types[gvk] = t
	return t
}

// builtinKindType returns the CEL type of a built-in kind, from client-go's schema (res.ObjectSchema).
func builtinKindType(gvk schema.GroupVersionKind, res ChildResourceInfo) *expr.ObjectType {
	if t, ok := builtinKindTypes.Load(gvk); ok {
		return t.(*expr.ObjectType)
	}
	t, err := expr.NewObjectTypeOf(kindTypeName(gvk), res.ObjectSchema.CELSchema())
	if err != nil {
		t = nil
	}
	stored, _ := builtinKindTypes.LoadOrStore(gvk, t)
	return stored.(*expr.ObjectType)
}

// kindTypeName names a kind's CEL type, as messages about types show it:
// metacel.kind.apps.v1.Deployment, metacel.kind.core.v1.Service.
func kindTypeName(gvk schema.GroupVersionKind) string {
	group := gvk.Group
	if group == "" {
		group = "core"
	}
	return "metacel.kind." + group + "." + gvk.Version + "." + gvk.Kind
}
