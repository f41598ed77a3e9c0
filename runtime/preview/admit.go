package preview

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"k8s.io/apiextensions-apiserver/pkg/apis/apiextensions"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	structuralschema "k8s.io/apiextensions-apiserver/pkg/apiserver/schema"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema/cel"
	structuraldefaulting "k8s.io/apiextensions-apiserver/pkg/apiserver/schema/defaulting"
	structurallisttype "k8s.io/apiextensions-apiserver/pkg/apiserver/schema/listtype"
	schemaobjectmeta "k8s.io/apiextensions-apiserver/pkg/apiserver/schema/objectmeta"
	structuralpruning "k8s.io/apiextensions-apiserver/pkg/apiserver/schema/pruning"
	apiservervalidation "k8s.io/apiextensions-apiserver/pkg/apiserver/validation"
	"k8s.io/apimachinery/pkg/api/validation"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utiljson "k8s.io/apimachinery/pkg/util/json"
	"k8s.io/apimachinery/pkg/util/validation/field"
	celconfig "k8s.io/apiserver/pkg/apis/cel"

	"metacel.dev/metacel/runtime/kinds"
)

// crdSchema checks objects of one custom resource as the API server does, with its code: the
// structural schema, pruning, defaulting, the OpenAPI schema validator, list types, embedded
// object metadata and x-kubernetes-validations rules.
type crdSchema struct {
	info       kinds.Info
	structural *structuralschema.Structural
	validator  apiservervalidation.SchemaValidator
	status     apiservervalidation.SchemaValidator // nil without a status schema
	rules      *cel.Validator
}

// newSchema builds the checks of a custom resource from its CRD version's schema, as the API server
// builds them when it serves the CRD; nil when info has no schema (a built-in or unknown resource).
func newSchema(info kinds.Info) (*crdSchema, error) {
	if info.Schema == nil {
		return nil, nil
	}
	internal := &apiextensions.JSONSchemaProps{}
	if err := apiextensionsv1.Convert_v1_JSONSchemaProps_To_apiextensions_JSONSchemaProps(info.Schema, internal, nil); err != nil {
		return nil, fmt.Errorf("convert the schema of %s: %w", info.GVR.GroupResource(), err)
	}
	structural, err := structuralschema.NewStructural(internal)
	if err != nil {
		return nil, fmt.Errorf("the schema of %s is not structural: %w", info.GVR.GroupResource(), err)
	}
	if err := structuraldefaulting.PruneDefaults(structural); err != nil {
		return nil, fmt.Errorf("the defaults of %s: %w", info.GVR.GroupResource(), err)
	}
	s := &crdSchema{info: info, structural: structural, rules: cel.NewValidator(structural, true, celconfig.PerCallLimit)}
	if s.validator, _, err = apiservervalidation.NewSchemaValidator(internal); err != nil {
		return nil, fmt.Errorf("the schema of %s: %w", info.GVR.GroupResource(), err)
	}
	if status, ok := internal.Properties["status"]; ok {
		if s.status, _, err = apiservervalidation.NewSchemaValidator(&status); err != nil {
			return nil, fmt.Errorf("the status schema of %s: %w", info.GVR.GroupResource(), err)
		}
	}
	return s, nil
}

// admit returns obj as the API server would store it on create, or an *InvalidError with every
// field it would refuse: fields the schema does not declare (kubectl's default strict field
// validation refuses them; the API server would drop them), then the schema's defaults applied,
// then the object validated. With a status subresource, a create ignores the status: obj's status
// (the cluster's view, given for its conditions) is kept as it is, unchecked.
func (s *crdSchema) admit(ctx context.Context, obj *unstructured.Unstructured) (*unstructured.Unstructured, error) {
	out, err := decoded(obj)
	if err != nil {
		return nil, err
	}
	status, hasStatus := out.Object["status"]
	if s.info.HasStatus {
		delete(out.Object, "status")
	}
	unknown, err := s.prune(out, "")
	if err != nil || len(unknown) > 0 {
		return nil, errors.Join(err, invalid(describe(obj), unknown, nil))
	}
	structuraldefaulting.Default(out.Object, s.structural)
	if errs := s.validate(ctx, out); len(errs) > 0 {
		return nil, invalid(describe(obj), nil, withValues(out.Object, errs))
	}
	if s.info.HasStatus && hasStatus {
		out.Object["status"] = status
	}
	return out, nil
}

// checkStatus checks obj's status as the API server checks a status write: fields its status
// schema does not declare, then the status schema, list types and validation rules.
func (s *crdSchema) checkStatus(ctx context.Context, obj *unstructured.Unstructured) error {
	out, err := decoded(obj)
	if err != nil {
		return err
	}
	unknown, err := s.prune(out, "status")
	if err != nil || len(unknown) > 0 {
		return errors.Join(err, invalid("the status of "+describe(obj), unknown, nil))
	}
	structuraldefaulting.Default(out.Object, s.structural)
	var errs field.ErrorList
	if status, ok := out.Object["status"]; ok && s.status != nil {
		errs = append(errs, apiservervalidation.ValidateCustomResource(field.NewPath("status"), status, s.status)...)
	}
	errs = append(errs, s.checkRules(ctx, out, structurallisttype.ValidateListSetsAndMaps(nil, s.structural, out.Object))...)
	if len(errs) > 0 {
		return invalid("the status of "+describe(obj), nil, withValues(out.Object, errs))
	}
	return nil
}

// prune removes the fields the schema does not declare, as the API server's decoder does, and
// returns those under prefix (all of them, metadata's included, when prefix is empty).
func (s *crdSchema) prune(obj *unstructured.Unstructured, prefix string) ([]string, error) {
	var unknown []string
	if prefix == "" {
		_, _, metaUnknown, err := schemaobjectmeta.GetObjectMetaWithOptions(obj.Object, schemaobjectmeta.ObjectMetaOptions{ReturnUnknownFieldPaths: true})
		if err != nil {
			return nil, fmt.Errorf("%s: metadata: %w", describe(obj), err)
		}
		unknown = append(unknown, metaUnknown...)
	}
	pruned := structuralpruning.PruneWithOptions(obj.Object, s.structural, true, structuralschema.UnknownFieldPathOptions{TrackUnknownFieldPaths: true})
	structuraldefaulting.PruneNonNullableNullsWithoutDefaults(obj.Object, s.structural)
	for _, p := range pruned {
		if prefix == "" || p == prefix || strings.HasPrefix(p, prefix+".") || strings.HasPrefix(p, prefix+"[") {
			unknown = append(unknown, p)
		}
	}
	return unknown, nil
}

// validate is the API server's validation of a new custom resource.
func (s *crdSchema) validate(ctx context.Context, obj *unstructured.Unstructured) field.ErrorList {
	errs := validation.ValidateObjectMetaAccessor(obj, s.info.Namespaced, validation.NameIsDNSSubdomain, field.NewPath("metadata"))
	errs = append(errs, apiservervalidation.ValidateCustomResource(nil, obj.Object, s.validator)...)
	errs = append(errs, schemaobjectmeta.Validate(nil, obj.Object, s.structural, false)...)
	errs = append(errs, structurallisttype.ValidateListSetsAndMaps(nil, s.structural, obj.Object)...)
	return s.checkRules(ctx, obj, errs)
}

// checkRules adds the errors of the x-kubernetes-validations rules to errs, unless errs already
// holds an error that stops the API server from running them. There is no old object, as on a
// create: a transition rule (one that reads oldSelf, as immutable fields do) is skipped, as the
// API server skips it on create.
func (s *crdSchema) checkRules(ctx context.Context, obj *unstructured.Unstructured, errs field.ErrorList) field.ErrorList {
	for _, e := range errs {
		switch e.Type {
		case field.ErrorTypeNotSupported, field.ErrorTypeRequired, field.ErrorTypeTooLong, field.ErrorTypeTooMany, field.ErrorTypeTypeInvalid:
			return errs // the API server skips the rules of an object with such errors
		}
	}
	ruleErrs, _ := s.rules.Validate(ctx, nil, s.structural, obj.Object, nil, celconfig.RuntimeCELCostBudget)
	return append(errs, ruleErrs...)
}

// decoded copies obj as the API server decodes it from JSON: integers are int64, other numbers
// float64.
func decoded(obj *unstructured.Unstructured) (*unstructured.Unstructured, error) {
	data, err := json.Marshal(obj.Object)
	if err != nil {
		return nil, fmt.Errorf("encode %s: %w", describe(obj), err)
	}
	out := map[string]any{}
	if err := utiljson.Unmarshal(data, &out); err != nil {
		return nil, fmt.Errorf("decode %s: %w", describe(obj), err)
	}
	return &unstructured.Unstructured{Object: out}, nil
}

// InvalidError is what the API server would refuse of an object: every field, with its rule.
type InvalidError struct {
	What string
	// Unknown are the paths of fields the schema does not declare.
	Unknown []string
	// Errs are the fields the schema, or its rules, refuse.
	Errs field.ErrorList
}

// invalid is an *InvalidError, or nil when there is nothing to report.
func invalid(what string, unknown []string, errs field.ErrorList) error {
	if len(unknown) == 0 && len(errs) == 0 {
		return nil
	}
	return &InvalidError{What: what, Unknown: unknown, Errs: errs}
}

func (e *InvalidError) Error() string {
	problems := e.Problems()
	lines := make([]string, len(problems))
	for i, p := range problems {
		if p.Path == "" { // a rule of the whole object (a nil path)
			lines[i] = p.Msg
			continue
		}
		lines[i] = p.Path + ": " + p.Msg
	}
	return fmt.Sprintf("%s is invalid, the API server would refuse it: %s", e.What, strings.Join(lines, "; "))
}

// FieldProblem is one field of an object that the API server would refuse, and why.
type FieldProblem struct {
	// Path is the field's path (spec.items[0].name), as the API server names it.
	Path string
	// Msg says what is wrong with it, and the fix when there is one.
	Msg string
}

// Problems lists the fields refused: the fields the schema does not declare, then those it or its
// rules refuse.
func (e *InvalidError) Problems() []FieldProblem {
	out := make([]FieldProblem, 0, len(e.Unknown)+len(e.Errs))
	for _, p := range e.Unknown {
		out = append(out, FieldProblem{Path: p, Msg: unknownFieldRule})
	}
	for _, fe := range e.Errs {
		path := fe.Field
		if path == "<nil>" { // a rule of the whole object
			path = ""
		}
		out = append(out, FieldProblem{Path: path, Msg: fe.ErrorBody()})
	}
	return out
}

// unknownFieldRule is what is wrong with a field the schema does not declare, and the fix.
const unknownFieldRule = "unknown field: the CRD's schema does not declare it (kubectl's strict field validation refuses it, the API server would drop it): remove it or correct its name"

// describe names an object as kubectl does: Kind namespace/name.
func describe(obj *unstructured.Unstructured) string {
	if obj.GetNamespace() == "" {
		return obj.GetKind() + " " + obj.GetName()
	}
	return obj.GetKind() + " " + obj.GetNamespace() + "/" + obj.GetName()
}
