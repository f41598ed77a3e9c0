package preview

import (
	"fmt"
	"os"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"metacel.dev/metacel/runtime/kinds"
	"metacel.dev/metacel/runtime/policy"
)

// LoadPolicy loads the policy of a file (a CompositePolicy, or a ConfigMap holding policies): the
// one it holds, or the one named name.
func LoadPolicy(file, name string, m kinds.Mapper) (*policy.Compiled, error) {
	data, err := os.ReadFile(file)
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
	return nil, fmt.Errorf("%s holds %d policies: choose one by its name (render --policy-name, a test file's policyName)", file, len(matched))
}

// ParentOf finds the parent among objs: the one object of the policy's parent resource (a sample
// file may hold its Namespace or related objects too). from names where objs come from, for errors.
func ParentOf(objs []*unstructured.Unstructured, c *policy.Compiled, m kinds.Mapper, from string) (*unstructured.Unstructured, error) {
	var parents []*unstructured.Unstructured
	var others []string
	for _, obj := range objs {
		if kinds.LookupKind(m, obj.GroupVersionKind()).GVR == c.Parent.GVR {
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
