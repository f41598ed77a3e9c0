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

// LoadCRDFiles adds the CRDs of every file to a new catalog of the built-in types.
func LoadCRDFiles(files []string) (*Catalog, error) {
	c := NewCatalog()
	for _, f := range files {
		crds, err := ReadCRDs(f)
		if err != nil {
			return nil, err
		}
		if len(crds) == 0 {
			return nil, fmt.Errorf("%s: no CustomResourceDefinition found", f)
		}
		for _, crd := range crds {
			c.AddCRD(crd)
		}
	}
	return c, nil
}
