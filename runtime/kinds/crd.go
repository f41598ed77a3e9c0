package kinds

import (
	"encoding/json"
	"fmt"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"sigs.k8s.io/yaml"

	"metacel.dev/metacel/runtime/manifest"
)

// ReadCRDs reads every CustomResourceDefinition in a YAML file, strictly; other objects are skipped.
func ReadCRDs(file string) ([]*apiextensionsv1.CustomResourceDefinition, error) {
	objs, err := manifest.ReadFile(file)
	if err != nil {
		return nil, err
	}
	var out []*apiextensionsv1.CustomResourceDefinition
	for _, obj := range objs {
		if obj.GetKind() != "CustomResourceDefinition" {
			continue
		}
		js, err := json.Marshal(obj.Object)
		if err != nil {
			return nil, err
		}
		crd := &apiextensionsv1.CustomResourceDefinition{}
		if err := yaml.UnmarshalStrict(js, crd); err != nil {
			return nil, fmt.Errorf("%s: CustomResourceDefinition %q: %w", file, obj.GetName(), err)
		}
		out = append(out, crd)
	}
	return out, nil
}

// LoadCRDFiles adds the CRDs of every file to a new catalog of the built-in types. A directory
// stands for its *.yaml, *.yml and *.json files, recursively (hidden ones aside), which may hold
// other objects too (its files that hold no CRD, such as test files, are passed over); a file
// named, or a directory, without any CRD is an error.
func LoadCRDFiles(paths []string) (*Catalog, error) {
	c := NewCatalog()
	for _, p := range paths {
		files, err := manifest.Files(p, manifest.Extensions...)
		if err != nil {
			return nil, err
		}
		found := 0
		for _, f := range files {
			if f != p && !holdsCRD(f) {
				continue // a folder's policies, samples and test files: no CRD, and maybe no object
			}
			crds, err := ReadCRDs(f)
			if err != nil {
				return nil, err
			}
			for _, crd := range crds {
				c.AddCRD(crd)
			}
			found += len(crds)
		}
		if found == 0 {
			return nil, fmt.Errorf("%s: no CustomResourceDefinition found", p)
		}
	}
	return c, nil
}

// holdsCRD reports whether a file of a directory has a CustomResourceDefinition document; one that
// is not YAML is read, for its error to show.
func holdsCRD(file string) bool {
	heads, err := manifest.ReadHeads(file)
	if err != nil {
		return true
	}
	for _, h := range heads {
		if h.Kind == "CustomResourceDefinition" {
			return true
		}
	}
	return false
}
