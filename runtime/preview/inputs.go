package preview

import (
	"context"
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"metacel.dev/metacel/runtime/conversion"
	"metacel.dev/metacel/runtime/kinds"
	"metacel.dev/metacel/runtime/manifest"
	"metacel.dev/metacel/runtime/policy"
)

// LoadPolicy loads the policy of a file (a CompositePolicy, or a ConfigMap holding policies): the
// one it holds, or the one named name.
func LoadPolicy(file, name string, m kinds.Mapper) (*policy.Compiled, error) {
	data, err := manifest.ReadInput(file)
	if err != nil {
		return nil, err
	}
	all, err := policy.Load(file, data, m)
	if err != nil {
		return nil, err
	}
	var matched []*policy.Compiled
	for _, c := range all {
		if name == "" || c.Name() == name {
			matched = append(matched, c)
		}
	}
	switch {
	case len(matched) == 1:
		return matched[0], nil
	case len(matched) == 0 && name != "":
		return nil, fmt.Errorf("%s: no policy named %q", file, name)
	case len(matched) == 0:
		return nil, fmt.Errorf("%s: no policy found", file)
	}
	if name != "" {
		return nil, fmt.Errorf("%s holds %d policies named %q: give each policy of a file its own name", file, len(matched), name)
	}
	return nil, fmt.Errorf("%s holds %d policies: choose one by its name (render --policy-name, a test file's policyName)", file, len(matched))
}

// CheckParentDefined fails when CRD files were given (cat holds CRDs) and none defines the
// policy's parent, which is neither built in nor declared by the policy's parentSchema: the
// parent and the fields the policy reads would go unchecked, though the files say they are, as
// when the wrong CRD file is given.
func CheckParentDefined(c *policy.Compiled, cat *kinds.Catalog) error {
	given := cat.CRDs()
	gr := c.Parent.GVR.GroupResource()
	if len(given) == 0 || cat.DefinedByCRD(gr) || !c.Parent.Guessed || c.Parent.Schema != nil {
		return nil
	}
	names := make([]string, len(given))
	for i, d := range given {
		names[i] = d.String()
	}
	return &policy.FieldError{File: c.Source.File, Line: c.Source.LineOf("spec.parentResource"), Path: "spec.parentResource",
		Msg: fmt.Sprintf("%s is defined by none of the CRD files given (they define %s): give the parent's CRD too, so that the parent and the fields the policy reads are checked, or none",
			gr, strings.Join(names, ", "))}
}

// ParentOf finds the parent among objs: the one object of the policy's parent resource (a sample
// file may hold its Namespace or related objects too), at another version the policy's
// parentSchema declares too, converted to the policy's version as the API server would convert it
// with the runtime's webhook (package conversion). from names where objs come from, for errors.
func ParentOf(ctx context.Context, objs []*unstructured.Unstructured, c *policy.Compiled, m kinds.Mapper, from string) (*unstructured.Unstructured, error) {
	var parents []*unstructured.Unstructured
	var others []string
	for _, obj := range objs {
		if converted, ok, err := asPolicyVersion(ctx, obj, c); ok || err != nil {
			if err != nil {
				return nil, fmt.Errorf("%s: %w", from, err)
			}
			parents = append(parents, converted)
			continue
		}
		if kinds.LookupKind(m, obj.GroupVersionKind()).GVR == c.Parent.GVR {
			if why := kinds.WrongKind(c.Parent, obj.GetKind()); why != "" {
				return nil, fmt.Errorf("%s: %s %q: kind: %s", from, obj.GetKind(), obj.GetName(), why)
			}
			parents = append(parents, obj)
		} else {
			others = append(others, obj.GetAPIVersion()+" "+obj.GetKind())
		}
	}
	if len(parents) != 1 {
		return nil, fmt.Errorf("%s: want exactly one object of policy %q's parent resource %s, found %d (other objects: %v)",
			from, c.Name(), c.Parent.GVR.GroupResource(), len(parents), others)
	}
	return parents[0], nil
}

// asPolicyVersion converts a parent at another version of the policy's parent to the policy's
// version, as the API server takes a create at that version: admitted first by that version's
// schema (its defaults applied, its rules checked: an *InvalidError), then converted; ok is false
// for any other object.
func asPolicyVersion(ctx context.Context, obj *unstructured.Unstructured, c *policy.Compiled) (*unstructured.Unstructured, bool, error) {
	cv := c.Conversion
	gvk := obj.GroupVersionKind()
	if cv == nil || gvk.Group != cv.Group || gvk.Kind != cv.Kind || gvk.Version == cv.Hub {
		return nil, false, nil
	}
	if v := cv.Versions[gvk.Version]; v != nil && v.Schema != nil {
		info := c.Parent
		info.GVR.Version, info.Schema = gvk.Version, v.Schema
		s, err := newSchema(info)
		if err != nil {
			return nil, true, err
		}
		if obj, err = s.admit(ctx, obj); err != nil {
			return nil, true, err
		}
	}
	converter, err := conversion.New(cv)
	if err != nil {
		return nil, true, err
	}
	out, err := converter.Convert(ctx, obj, c.Parent.GVR.GroupVersion().String())
	return out, true, err
}
