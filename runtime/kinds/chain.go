package kinds

import "k8s.io/apimachinery/pkg/runtime/schema"

// Chain is a Mapper that asks each of its mappers in turn: the first that knows a resource or
// kind answers. `metacel validate --crd F --kubeconfig K` chains the CRD files (the ones under
// review) before the cluster.
type Chain []Mapper

var _ Mapper = Chain{}

// ForResource implements Mapper.
func (c Chain) ForResource(gvr schema.GroupVersionResource) (Info, bool) {
	for _, m := range c {
		if info, ok := m.ForResource(gvr); ok {
			return info, true
		}
	}
	return Info{}, false
}

// ForKind implements Mapper.
func (c Chain) ForKind(gvk schema.GroupVersionKind) (Info, bool) {
	for _, m := range c {
		if info, ok := m.ForKind(gvk); ok {
			return info, true
		}
	}
	return Info{}, false
}

// Versions implements Mapper: those of the first mapper that knows the resource.
func (c Chain) Versions(gr schema.GroupResource) []string {
	for _, m := range c {
		if v := m.Versions(gr); len(v) > 0 {
			return v
		}
	}
	return nil
}
