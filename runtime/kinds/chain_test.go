package kinds

import (
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

func chainedCRD(scope apiextensionsv1.ResourceScope) *apiextensionsv1.CustomResourceDefinition {
	return &apiextensionsv1.CustomResourceDefinition{Spec: apiextensionsv1.CustomResourceDefinitionSpec{
		Group: "example.com", Scope: scope,
		Names:    apiextensionsv1.CustomResourceDefinitionNames{Plural: "gadgets", Kind: "Gadget"},
		Versions: []apiextensionsv1.CustomResourceDefinitionVersion{{Name: "v1", Served: true, Storage: true}},
	}}
}

func TestAChainAsksItsMappersInOrder(t *testing.T) {
	gadgets := schema.GroupVersionResource{Group: "example.com", Version: "v1", Resource: "gadgets"}
	first, second := NewCatalog(), NewCatalog()
	second.AddCRD(chainedCRD(apiextensionsv1.ClusterScoped))
	chain := Chain{first, second}
	if info, ok := chain.ForResource(gadgets); !ok || info.Namespaced {
		t.Errorf("ForResource: %+v, %v; want the second mapper's cluster-scoped Gadget", info, ok)
	}
	first.AddCRD(chainedCRD(apiextensionsv1.NamespaceScoped))
	if info, ok := chain.ForKind(gadgets.GroupVersion().WithKind("Gadget")); !ok || !info.Namespaced {
		t.Errorf("ForKind: %+v, %v; want the first mapper's namespaced Gadget", info, ok)
	}
	if v := chain.Versions(gadgets.GroupResource()); len(v) != 1 || v[0] != "v1" {
		t.Errorf("Versions: %v", v)
	}
	if _, ok := (Chain{}).ForResource(gadgets); ok {
		t.Error("an empty chain knows a resource")
	}
}
