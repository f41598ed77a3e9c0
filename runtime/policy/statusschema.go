package policy

import (
	"maps"
	"slices"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"

	"metacel.dev/metacel/runtime/expr"
	"metacel.dev/metacel/runtime/fieldpath"
	"metacel.dev/metacel/runtime/kinds"
)

// Fields metacel writes in a parent's status, and in each of its conditions.
var (
	runtimeStatusFields    = []string{"conditions", "observedGeneration"}
	runtimeConditionFields = []string{"type", "status", "reason", "message", "lastTransitionTime", "observedGeneration"}
)

// statusSchema checks that the parent's CRD can store the status metacel writes: the API
// server rejects a status write holding a field its schema does not declare, so every sync of
// every parent would fail. Only the fields of the policy's status known at load (the top-level
// keys of a status template) are checked.
func (c *checker) statusSchema(parent kinds.Info) {
	gr := parent.GVR.GroupResource()
	if !parent.HasStatus && !parent.Guessed && c.spec.Status != nil {
		if parent.Schema != nil {
			c.errorf("spec.status", "the CRD of %s has no status subresource, so this status would never be written: "+
				"add subresources: {status: {}} to its version %s", gr, parent.GVR.Version)
		} else {
			c.errorf("spec.status", "%s is a built-in resource, whose status metacel never writes: remove spec.status", gr)
		}
		return
	}
	if !parent.HasStatus || parent.Schema == nil {
		return
	}
	status, ok := parent.Schema.Properties["status"]
	if !ok {
		c.errorf("spec.parentResource", "the CRD of %s declares no status, where metacel writes %v: add "+
			"status: {type: object, x-kubernetes-preserve-unknown-fields: true} to its schema, or declare those fields", gr, runtimeStatusFields)
		return
	}
	for _, f := range runtimeStatusFields {
		if !declares(&status, f) {
			c.errorf("spec.parentResource", "the CRD of %s declares no status.%s, which metacel writes: add it to the status schema "+
				"(see crds/myapp.yaml), or set x-kubernetes-preserve-unknown-fields: true on status", gr, f)
		}
	}
	if conds, ok := status.Properties["conditions"]; ok && conds.Type != "array" {
		c.errorf("spec.parentResource", "the CRD of %s declares status.conditions as %q: metacel writes a list of conditions (type: array)", gr, conds.Type)
	} else if ok && conds.Items != nil && conds.Items.Schema != nil {
		for _, f := range runtimeConditionFields {
			if !declares(conds.Items.Schema, f) {
				c.errorf("spec.parentResource", "the CRD of %s declares no status.conditions[].%s, which metacel writes: "+
					"declare the fields of a metav1.Condition (see crds/myapp.yaml)", gr, f)
			}
		}
	}
	for _, k := range slices.Sorted(maps.Keys(c.spec.Status)) {
		if !slices.Contains(runtimeStatusFields, k) && !declares(&status, k) {
			c.errorf(fieldpath.Field("spec.status", k), "the CRD of %s declares no status.%s: add it to the status schema, "+
				"or the API server rejects every status write", gr, k)
		}
	}
}

// declares reports whether an object schema accepts a field.
func declares(s *apiextensionsv1.JSONSchemaProps, field string) bool {
	if s.XPreserveUnknownFields != nil && *s.XPreserveUnknownFields {
		return true
	}
	if a := s.AdditionalProperties; a != nil && (a.Allows || a.Schema != nil) {
		return true
	}
	_, ok := s.Properties[field]
	return ok
}

// statusTypes checks the policy's status against the parent's status schema, as the
// children's templates are checked against their kinds': a literal of the wrong type, or a
// whole-value "${...}" whose type the field does not take, is an error at its line (env types the
// ${} values: nil checks none). Fields the schema does not declare are statusSchema's.
func (c *checker) statusTypes(parent kinds.Info, env *expr.Env) {
	if c.spec.Status == nil || parent.Schema == nil || !parent.HasStatus || env == nil {
		return
	}
	parent.Guessed = false // a declared parent's schema is known too
	s, err := kinds.SchemaOf(parent)
	if err != nil || s == nil {
		return
	}
	s.CheckStatusTemplate(c.spec.Status, "spec", newTemplateCheck(c.loadErrors, env, s), c.reportSchemaProblem)
}
