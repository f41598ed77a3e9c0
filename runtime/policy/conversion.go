package policy

import (
	"maps"
	"reflect"
	"slices"
	"strings"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"metacel.dev/metacel/runtime/expr"
	"metacel.dev/metacel/runtime/fieldpath"
	"metacel.dev/metacel/runtime/kinds"
)

// CompiledConversion is how the parent's objects convert between the versions its parentSchema
// declares: every conversion goes through the policy's version (the hub), each other version
// having its way there (ToHub) and back (FromHub). Package conversion carries it out.
type CompiledConversion struct {
	// Group and Kind of the parent's objects.
	Group, Kind string
	// Hub is the policy's version (e.g. v1), and HubSchema the schema its objects must fit.
	Hub       string
	HubSchema *apiextensionsv1.JSONSchemaProps
	// Versions are the other versions, by name.
	Versions map[string]*CompiledVersion
}

// CompiledVersion is one of the parent's other versions.
type CompiledVersion struct {
	Name string
	// Schema is the schema the version's objects must fit.
	Schema         *apiextensionsv1.JSONSchemaProps
	ToHub, FromHub CompiledDirection
}

// CompiledDirection is one way between a version and the hub.
type CompiledDirection struct {
	// Spec and Status give the other version's spec and status from parent; nil copies them.
	Spec, Status *expr.Template
	// Keep are the paths of the fields (spec.legacy) the templates do not carry, which the
	// converted object keeps in an annotation until it converts back.
	Keep []string
}

// conversionCompiler compiles the conversions of a policy's parent versions: a type of its own,
// beside the compiler of the policy's sync, whose errors it reports.
type conversionCompiler struct {
	*loadErrors
	spec *Spec
}

// versionConversionHint is the end of a message about a conversion between versions: what to write.
const versionConversionHint = "write the conversion as a template of the other version's fields, e.g. " +
	`toHub: {spec: {replicas: "${int(parent.spec.size)}"}}`

// conversion compiles the conversions of the parent's other versions, typed against the CRD the
// policy declares (crd, nil when it declares none): each template against the schema of the
// version it reads (parent) and of the one it gives, and checked to lose nothing.
func (c *conversionCompiler) conversion(crd *apiextensionsv1.CustomResourceDefinition) *CompiledConversion {
	ps := c.spec.ParentSchema
	if ps == nil || len(ps.Versions) == 0 || crd == nil {
		return nil
	}
	hub := crd.Spec.Versions[0]
	out := &CompiledConversion{Group: crd.Spec.Group, Kind: crd.Spec.Names.Kind, Hub: hub.Name, HubSchema: hub.Schema.OpenAPIV3Schema,
		Versions: map[string]*CompiledVersion{}}
	hubSchema := c.versionSchema(crd, hub, "spec.parentSchema")
	for i, v := range ps.Versions {
		path := fieldpath.Index("spec.parentSchema.versions", i)
		declared := crd.Spec.Versions[i+1]
		vs := c.versionSchema(crd, declared, path)
		cv := &CompiledVersion{Name: v.Name, Schema: declared.Schema.OpenAPIV3Schema}
		if vs != nil && hubSchema != nil {
			sameSpec, sameStatus := reflect.DeepEqual(v.Spec, ps.Spec), reflect.DeepEqual(v.Status, ps.Status)
			cv.ToHub = c.direction(v.ToHub, path+".toHub", declared, hubSchema, sameSpec, sameStatus)
			cv.FromHub = c.direction(v.FromHub, path+".fromHub", hub, vs, sameSpec, sameStatus)
		}
		out.Versions[v.Name] = cv
	}
	return out
}

// versionSchema returns the schema of a version's objects, for typing and fitting.
func (c *conversionCompiler) versionSchema(crd *apiextensionsv1.CustomResourceDefinition, v apiextensionsv1.CustomResourceDefinitionVersion, path string) *kinds.ObjectSchema {
	info := kinds.Info{GVR: schema.GroupVersionResource{Group: crd.Spec.Group, Version: v.Name, Resource: crd.Spec.Names.Plural},
		Kind: crd.Spec.Names.Kind, Schema: v.Schema.OpenAPIV3Schema}
	s, err := kinds.SchemaOf(info)
	if err != nil {
		c.errorf(path, "%v", err)
	}
	return s
}

// direction compiles one way of a conversion: from the version from (whose objects are parent)
// to the one whose schema is to. A part not written is copied, which needs the same fields.
func (c *conversionCompiler) direction(d Conversion, path string, from apiextensionsv1.CustomResourceDefinitionVersion, to *kinds.ObjectSchema, sameSpec, sameStatus bool) CompiledDirection {
	parent, err := expr.ParentType(from.Schema.OpenAPIV3Schema)
	if err != nil {
		c.errorf(path, "the schema of version %q cannot type CEL expressions: %v", from.Name, err)
		return CompiledDirection{}
	}
	env, err := expr.NewEnv(expr.Scope{Parent: parent})
	if err != nil {
		c.errorf(path, "%v", err)
		return CompiledDirection{}
	}
	out := CompiledDirection{Keep: d.Keep}
	out.Spec = c.conversionPart(env, d.Spec, path, "spec", to, sameSpec)
	out.Status = c.conversionPart(env, d.Status, path, "status", to, sameStatus)
	c.checkLossless(path, from, out, d.Keep)
	return out
}

// conversionPart compiles the template of the spec or status of a conversion, and checks it
// against the schema it must fit; one not written must be the same in both versions.
func (c *conversionCompiler) conversionPart(env *expr.Env, tmpl any, path, part string, to *kinds.ObjectSchema, same bool) *expr.Template {
	at := path + "." + part
	if tmpl == nil {
		if !same {
			c.errorf(path, "the two versions declare different fields in %s, so it cannot be copied: %s", part, versionConversionHint)
		}
		return nil
	}
	t, err := env.CompileTemplate(tmpl, at)
	if err != nil {
		c.fail(at, err)
		return nil
	}
	if part == "status" {
		c.checkStatusGuarded(env, t, at)
	}
	if m, ok := tmpl.(map[string]any); ok && part == "spec" {
		to.CheckTemplate(map[string]any{"spec": m}, path, newTemplateCheck(c.loadErrors, env, to), c.reportSchemaProblem)
	} else if ok {
		to.CheckStatusTemplate(m, path, newTemplateCheck(c.loadErrors, env, to), c.reportSchemaProblem)
	}
	return t
}

// checkStatusGuarded refuses a status template that reads the parent's status without a guard:
// a parent has none when it is created (its status is written after), so its conversion, on a
// create or a read at the other version, would fail ("no such key: status") for every new parent.
func (c *conversionCompiler) checkStatusGuarded(env *expr.Env, t *expr.Template, at string) {
	for _, src := range t.Sources() {
		if env.SelectsUnguarded(src, "parent", "status") {
			c.errorf(at, "%q reads parent.status, which a new parent does not have until its status is written: "+
				"every conversion of one would fail; read it optionally, e.g. \"${parent.?status.?phase}\" (a field left out when absent), "+
				"or guard it with has(parent.status)", src)
		}
	}
}

// checkLossless checks that a conversion carries every field of the version it reads: read by
// its templates, copied, or kept; and that what it keeps is a field of that version.
func (c *conversionCompiler) checkLossless(path string, from apiextensionsv1.CustomResourceDefinitionVersion, d CompiledDirection, keep []string) {
	var refs expr.Refs
	for _, t := range []*expr.Template{d.Spec, d.Status} {
		refs.Add(t.Refs())
	}
	fields := leafFields(from.Schema.OpenAPIV3Schema)
	for i, k := range keep {
		under := func(f string) bool { return f == k || strings.HasPrefix(f, k+".") }
		if !slices.ContainsFunc(fields, under) {
			c.errorf(fieldpath.Index(path+".keep", i), "%q is not a field of version %q: keep lists the fields the conversion does not carry, e.g. spec.legacy", k, from.Name)
			continue
		}
		// a kept field is put back over what the conversion back gives: one the conversion
		// carries would undo an edit made at the other version
		if carried := slices.IndexFunc(fields, func(f string) bool { return under(f) && refs.ReadsParentField(f) }); carried >= 0 {
			f := fields[carried]
			c.errorf(fieldpath.Index(path+".keep", i), "%q holds %s, which the conversion carries (an expression reads parent.%s): kept, it would be put back over the value converted back, "+
				"undoing an edit made at the other version; keep only the fields under %s that no expression reads", k, f, f, k)
		}
	}
	for _, f := range fields {
		part, _, _ := strings.Cut(f, ".")
		copied := (part == "spec" && d.Spec == nil) || (part == "status" && d.Status == nil)
		if copied || refs.ReadsParentField(f) || slices.ContainsFunc(keep, func(k string) bool { return f == k || strings.HasPrefix(f, k+".") }) {
			continue
		}
		c.errorf(path, "loses %s of version %q: no expression reads parent.%s, so a round trip would drop it; "+
			"carry it into the other version's fields, or list it in keep: [%s] (the runtime keeps it in an annotation until the object converts back)", f, from.Name, f, f)
	}
}

// leafFields returns the paths of the fields a version declares in its spec and status, each
// object's fields in turn down to those that are not objects with fields of their own; the
// status fields metacel writes are left out (every version holds them).
func leafFields(root *apiextensionsv1.JSONSchemaProps) []string {
	var out []string
	var walk func(prefix string, s apiextensionsv1.JSONSchemaProps)
	walk = func(prefix string, s apiextensionsv1.JSONSchemaProps) {
		if len(s.Properties) == 0 {
			out = append(out, prefix)
			return
		}
		for _, name := range slices.Sorted(maps.Keys(s.Properties)) {
			walk(prefix+"."+name, s.Properties[name])
		}
	}
	for _, part := range []string{"spec", "status"} {
		for _, name := range slices.Sorted(maps.Keys(root.Properties[part].Properties)) {
			if part == "status" && (name == "conditions" || name == "observedGeneration") {
				continue
			}
			walk(part+"."+name, root.Properties[part].Properties[name])
		}
	}
	return out
}

// CompileConversion compiles the conversions of a policy's parent versions alone, from the CRD its
// parentSchema declares, for the runtime's conversion webhook: it converts the parents of a CRD
// it installs from the moment the CRD is written, before the policy itself loads (its children's
// kinds may not be served yet). nil without other versions. doc must have passed Validate.
func CompileConversion(doc *Document) (*CompiledConversion, error) {
	crd, err := ParentCRD(doc)
	if err != nil {
		return nil, err
	}
	c := &conversionCompiler{&loadErrors{src: doc.Source}, &doc.Policy.Spec}
	out := c.conversion(crd)
	if err := c.errs.Err(); err != nil {
		return nil, err
	}
	return out, nil
}
