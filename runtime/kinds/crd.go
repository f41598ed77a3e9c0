package kinds

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"
)

// ReadCRDs reads every CustomResourceDefinition in a YAML file; other documents are skipped.
func ReadCRDs(file string) ([]*apiextensionsv1.CustomResourceDefinition, error) {
	data, err := os.ReadFile(file)
	if err != nil {
		return nil, err
	}
	var out []*apiextensionsv1.CustomResourceDefinition
	r := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
	for {
		doc, err := r.Read()
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %w", file, err)
		}
		var head struct{ APIVersion, Kind string }
		if err := yaml.Unmarshal(doc, &head); err != nil {
			return nil, fmt.Errorf("%s: %w", file, err)
		}
		if head.Kind != "CustomResourceDefinition" {
			continue
		}
		crd := &apiextensionsv1.CustomResourceDefinition{}
		if err := yaml.UnmarshalStrict(doc, crd); err != nil {
			return nil, fmt.Errorf("%s: CustomResourceDefinition: %w", file, err)
		}
		out = append(out, crd)
	}
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
