package policy

import (
	"encoding/base64"
	"sort"
	"strings"

	"metacel.dev/metacel/runtime/contract"
	"metacel.dev/metacel/runtime/fieldpath"
)

// The fields of a child that the runtime owns: a template that sets them would fight the runtime
// or the garbage collector (an ownerReference to another parent, or across namespaces, has the
// child deleted as soon as it is created, and created again), or hide what the child belongs to.
var (
	// reservedMetadata are metadata fields the runtime sets, with why
	reservedMetadata = map[string]string{
		"ownerReferences":            "metacel sets the parent's ownerReference itself (an owner of the template's choosing has the garbage collector delete the child, and metacel create it again)",
		"uid":                        "the API server assigns it",
		"resourceVersion":            "the API server assigns it (applied, it would be a precondition that fails)",
		"managedFields":              "the API server keeps it",
		"generation":                 "the API server counts it (it resets what a create sends, and the child would be applied at every sync)",
		"deletionTimestamp":          "the API server sets it when the object is deleted",
		"deletionGracePeriodSeconds": "the API server sets it when the object is deleted (a create's is dropped, and the child would be applied at every sync)",
	}
	// reservedKeys say which labels and annotations are metacel's own (package contract)
	reservedKeys = []struct {
		kind     string
		reserved func(key string) bool
	}{{"labels", contract.IsBookkeepingLabel}, {"annotations", contract.IsBookkeepingAnnotation}}
)

// reserved rejects a template that sets what the runtime owns: metadata.ownerReferences and
// the like, metacel's labels (metacel.dev/*, app.kubernetes.io/managed-by) and annotations.
func (c *checker) reserved(tmpl map[string]any, path string) {
	meta, _ := tmpl["metadata"].(map[string]any)
	for _, f := range sortedKeys(meta) {
		if why, ok := reservedMetadata[f]; ok {
			c.errorf(path+".metadata."+f, "is set by the runtime, not by a template: %s; remove it", why)
		}
	}
	if ts, ok := meta["creationTimestamp"]; ok && ts != nil { // null, as kubectl prints it, stores nothing
		c.errorf(path+".metadata.creationTimestamp", "is set by the API server when the object is created, not by a template (the child would be applied at every sync); remove it, or leave it null")
	}
	for _, r := range reservedKeys {
		m, _ := meta[r.kind].(map[string]any)
		for _, k := range sortedKeys(m) {
			if r.reserved(k) {
				c.errorf(fieldpath.Field(path+".metadata."+r.kind, k), "%q is metacel's own (it says which policy, parent and entry a child belongs to, and that metacel manages it): remove it, or use a key of your own domain", k)
			}
		}
	}
}

// base64Fields are the fields of built-in kinds whose values are base64, by kind: a value that is
// not fails every render (the object "cannot be handled"), where the API server would say so at
// the template's root.
var base64Fields = map[string]struct{ field, instead string }{
	"Secret":    {"data", "write the text under stringData (the API server encodes it), or encode it"},
	"ConfigMap": {"binaryData", "put text under data, or encode it"},
}

// base64 rejects a literal value of a Secret's data or a ConfigMap's binaryData that is no
// base64, at its key.
func (c *checker) base64(tmpl map[string]any, path string) {
	kind, _ := tmpl["kind"].(string)
	f, ok := base64Fields[kind]
	if !ok || tmpl["apiVersion"] != "v1" {
		return
	}
	values, _ := tmpl[f.field].(map[string]any)
	for _, k := range sortedKeys(values) {
		v, isString := values[k].(string)
		if !isString || strings.Contains(v, "${") {
			continue
		}
		if _, err := base64.StdEncoding.DecodeString(v); err != nil {
			c.errorf(fieldpath.Field(path+"."+f.field, k), "is not base64, which a %s's %s holds: %s", kind, f.field, f.instead)
		}
	}
}

func sortedKeys(m map[string]any) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
