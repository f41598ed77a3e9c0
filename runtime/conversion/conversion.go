package conversion

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"reflect"
	"strings"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apimachineryvalidation "k8s.io/apimachinery/pkg/api/validation"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utiljson "k8s.io/apimachinery/pkg/util/json"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"metacel.dev/metacel/runtime/contract"
	"metacel.dev/metacel/runtime/crdinstall"
	"metacel.dev/metacel/runtime/expr"
	"metacel.dev/metacel/runtime/policy"
)

// Converter converts the parents of one policy between their versions. It is immutable and safe
// for concurrent use.
type Converter struct {
	c *policy.CompiledConversion
	// checkers check a converted object as the API server will, by version
	checkers map[string]*crdinstall.Checker
	// numbers are where each version's schema declares number fields, which its expressions read
	// as doubles (expr.Numbers), by version
	numbers map[string]*expr.Numbers
}

// New returns the converter of a policy's conversion. Call it once, when the policy loads.
func New(c *policy.CompiledConversion) (*Converter, error) {
	cv := &Converter{c: c, checkers: map[string]*crdinstall.Checker{}, numbers: map[string]*expr.Numbers{}}
	schemas := map[string]*apiextensionsv1.JSONSchemaProps{c.Hub: c.HubSchema}
	for name, v := range c.Versions {
		schemas[name] = v.Schema
	}
	for name, s := range schemas {
		checker, err := crdinstall.NewChecker(s)
		if err != nil {
			return nil, fmt.Errorf("the schema of %s %s: %w", name, c.Kind, err)
		}
		cv.checkers[name] = checker
		cv.numbers[name] = expr.NumbersOf(s)
	}
	return cv, nil
}

// GroupKind is the group and kind of the objects the converter converts.
func (cv *Converter) GroupKind() schema.GroupKind {
	return schema.GroupKind{Group: cv.c.Group, Kind: cv.c.Kind}
}

// Versions returns the names of the versions the converter knows, the policy's first.
func (cv *Converter) Versions() []string {
	out := []string{cv.c.Hub}
	for name := range cv.c.Versions {
		out = append(out, name)
	}
	return out
}

// Convert returns obj converted to toAPIVersion (group/version): through the policy's version,
// each step checked against its version's schema. An object already at toAPIVersion is returned
// as a copy. obj is not modified.
func (cv *Converter) Convert(ctx context.Context, obj *unstructured.Unstructured, toAPIVersion string) (*unstructured.Unstructured, error) {
	from, err := cv.version(obj.GetAPIVersion())
	if err != nil {
		return nil, err
	}
	to, err := cv.version(toAPIVersion)
	if err != nil {
		return nil, err
	}
	out := obj.DeepCopy()
	if from == to {
		return out, nil
	}
	if from != cv.c.Hub {
		v := cv.c.Versions[from]
		if out, err = cv.step(ctx, out, v.ToHub, from, cv.c.Hub); err != nil {
			return nil, err
		}
	}
	if to != cv.c.Hub {
		v := cv.c.Versions[to]
		if out, err = cv.step(ctx, out, v.FromHub, cv.c.Hub, to); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// version returns the version of an apiVersion of the converter's group.
func (cv *Converter) version(apiVersion string) (string, error) {
	gv, err := schema.ParseGroupVersion(apiVersion)
	if err != nil {
		return "", fmt.Errorf("apiVersion %q: %w", apiVersion, err)
	}
	if gv.Group != cv.c.Group {
		return "", fmt.Errorf("apiVersion %q is not of the group %q of %s", apiVersion, cv.c.Group, cv.c.Kind)
	}
	if _, ok := cv.c.Versions[gv.Version]; !ok && gv.Version != cv.c.Hub {
		return "", fmt.Errorf("%s has no version %q: its versions are %s", cv.c.Kind, gv.Version, strings.Join(cv.Versions(), ", "))
	}
	return gv.Version, nil
}

// step converts an object one way, from the version from to the version to, whose schema the
// result must fit as the API server checks it: its spec and status from the direction's
// templates (or copied), the fields it kept from to put back, the fields d keeps kept.
func (cv *Converter) step(ctx context.Context, obj *unstructured.Unstructured, d policy.CompiledDirection, from, to string) (*unstructured.Unstructured, error) {
	act := expr.NewActivation(map[string]any{"parent": cv.numbers[from].AsDoubles(obj.Object)})
	budget := expr.NewBudget()
	out := &unstructured.Unstructured{Object: map[string]any{}}
	for k, v := range obj.Object {
		if k != "spec" && k != "status" {
			out.Object[k] = runtime.DeepCopyJSONValue(v)
		}
	}
	out.SetAPIVersion(schema.GroupVersion{Group: cv.c.Group, Version: to}.String())
	for _, part := range []struct {
		name string
		tmpl *expr.Template
	}{{"spec", d.Spec}, {"status", d.Status}} {
		v, err := convertPart(ctx, obj, part.name, part.tmpl, act, budget)
		if err != nil {
			return nil, fmt.Errorf("convert %s %s from %s to %s: %s: %w", cv.c.Kind, name(obj), from, to, part.name, err)
		}
		if v != nil {
			out.Object[part.name] = v
		}
	}
	if err := restoreKept(out, obj, to); err != nil {
		return nil, fmt.Errorf("convert %s %s from %s to %s: %w", cv.c.Kind, name(obj), from, to, err)
	}
	if err := keep(out, obj, from, d.Keep); err != nil {
		return nil, fmt.Errorf("convert %s %s from %s to %s: %w", cv.c.Kind, name(obj), from, to, err)
	}
	if problems := cv.checkers[to].Check(out.Object); len(problems) > 0 {
		return nil, fmt.Errorf("convert %s %s from %s to %s: the result is not a valid %s %s: %s", cv.c.Kind, name(obj), from, to, to, cv.c.Kind, strings.Join(problems, "; "))
	}
	return out, nil
}

// convertPart gives the spec or status of the converted object: the template's result, or the
// object's own part copied. The status fields metacel writes are carried over either way.
func convertPart(ctx context.Context, obj *unstructured.Unstructured, part string, tmpl *expr.Template, act expr.Activation, b *expr.Budget) (any, error) {
	own, _, _ := unstructured.NestedFieldCopy(obj.Object, part)
	if tmpl == nil {
		return own, nil
	}
	v, err := tmpl.Eval(ctx, act, b)
	if err != nil || part != "status" {
		return v, err
	}
	status, _ := v.(map[string]any)
	ownStatus, _ := own.(map[string]any)
	for _, f := range []string{"conditions", "observedGeneration"} {
		if x, ok := ownStatus[f]; ok {
			if status == nil {
				status = map[string]any{}
			}
			status[f] = x
		}
	}
	if status == nil {
		return nil, nil
	}
	return status, nil
}

// restoreKept puts back into out the fields of version to that an earlier conversion from to
// kept in an annotation of obj, and drops the annotation. Whole numbers come back as int64, as the
// API server decodes them (apimachinery's json), not as encoding/json's float64.
func restoreKept(out, obj *unstructured.Unstructured, to string) error {
	key := contract.AnnotationKeptPrefix + to
	raw, ok := obj.GetAnnotations()[key]
	if !ok {
		return nil
	}
	var kept map[string]any
	if err := utiljson.Unmarshal([]byte(raw), &kept); err != nil {
		return fmt.Errorf("the annotation %s does not hold the fields a conversion kept: %w", key, err)
	}
	for path, v := range kept {
		if err := unstructured.SetNestedField(out.Object, v, strings.Split(path, ".")...); err != nil {
			return fmt.Errorf("put back %s from the annotation %s: %w", path, key, err)
		}
	}
	setAnnotations(out, func(a map[string]string) { delete(a, key) })
	return nil
}

// keep keeps in an annotation of out the fields of obj, at version from, that the conversion does
// not carry. Annotations the API server would refuse (all of them over 256 KiB) fail the
// conversion, naming the fields kept.
func keep(out, obj *unstructured.Unstructured, from string, paths []string) error {
	kept := map[string]any{}
	var names []string
	for _, path := range paths {
		if v, ok, _ := unstructured.NestedFieldCopy(obj.Object, strings.Split(path, ".")...); ok {
			kept[path] = v
			names = append(names, path)
		}
	}
	if len(kept) == 0 {
		return nil
	}
	raw, err := json.Marshal(kept)
	if err != nil {
		return fmt.Errorf("keep %v: %w", paths, err)
	}
	key := contract.AnnotationKeptPrefix + from
	setAnnotations(out, func(a map[string]string) { a[key] = string(raw) })
	if errs := apimachineryvalidation.ValidateAnnotations(out.GetAnnotations(), field.NewPath("metadata", "annotations")); len(errs) > 0 {
		return fmt.Errorf("keep %s in the annotation %s (%d bytes), which the API server would refuse: %w; keep fewer or smaller fields, or declare them at %s",
			strings.Join(names, ", "), key, len(raw), errs.ToAggregate(), out.GetAPIVersion())
	}
	return nil
}

// setAnnotations changes out's annotations.
func setAnnotations(out *unstructured.Unstructured, change func(map[string]string)) {
	a := maps.Clone(out.GetAnnotations())
	if a == nil {
		a = map[string]string{}
	}
	change(a)
	if len(a) == 0 {
		a = nil
	}
	out.SetAnnotations(a)
}

// name is namespace/name of an object, or its name when cluster-scoped.
func name(obj *unstructured.Unstructured) string {
	if ns := obj.GetNamespace(); ns != "" {
		return fmt.Sprintf("%q", ns+"/"+obj.GetName())
	}
	return fmt.Sprintf("%q", obj.GetName())
}

// RoundTrip converts obj to each other version the converter knows and back, and returns an
// error naming the first version whose round trip changes the object, and what changed: what
// `metacel validate` checks of each sample parent, since the API server would lose that
// difference the first time it stores the object at another version.
func (cv *Converter) RoundTrip(ctx context.Context, obj *unstructured.Unstructured) error {
	for _, v := range cv.Versions() {
		gv := schema.GroupVersion{Group: cv.c.Group, Version: v}.String()
		if gv == obj.GetAPIVersion() {
			continue
		}
		there, err := cv.Convert(ctx, obj, gv)
		if err != nil {
			return err
		}
		back, err := cv.Convert(ctx, there, obj.GetAPIVersion())
		if err != nil {
			return err
		}
		if changed := changedParts(obj, back); len(changed) > 0 {
			return fmt.Errorf("a round trip through %s changes %s %s: %s", v, cv.c.Kind, name(obj), strings.Join(changed, "; "))
		}
	}
	return nil
}

// changedParts says which of an object's spec, status and annotations differ in after, with both
// values.
func changedParts(before, after *unstructured.Unstructured) []string {
	var out []string
	for _, path := range [][]string{{"spec"}, {"status"}, {"metadata", "annotations"}} {
		b, _, _ := unstructured.NestedFieldNoCopy(before.Object, path...)
		a, _, _ := unstructured.NestedFieldNoCopy(after.Object, path...)
		if !reflect.DeepEqual(a, b) {
			out = append(out, fmt.Sprintf("%s was %v, is %v", strings.Join(path, "."), b, a))
		}
	}
	return out
}
