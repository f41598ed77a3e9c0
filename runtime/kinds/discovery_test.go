package kinds

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	fakediscovery "k8s.io/client-go/discovery/fake"
	k8stesting "k8s.io/client-go/testing"
)

// A CRD's resources leave discovery a moment after the CRD is deleted: a policy loaded in that
// moment must see them as not served.
func TestACRDSeenDeletedIsNotServedWhileDiscoveryStillListsIt(t *testing.T) {
	gadgets := schema.GroupVersionResource{Group: "example.com", Version: "v1", Resource: "gadgets"}
	dc := &fakediscovery.FakeDiscovery{Fake: &k8stesting.Fake{Resources: []*metav1.APIResourceList{{
		GroupVersion: "example.com/v1",
		APIResources: []metav1.APIResource{{Name: "gadgets", Kind: "Gadget", Namespaced: true}},
	}}}}
	d := NewDiscovery(dc, nil)
	served := func() bool {
		_, byResource := d.ForResource(gadgets)
		_, byKind := d.ForKind(gadgets.GroupVersion().WithKind("Gadget"))
		versions := d.Versions(gadgets.GroupResource())
		if byResource != byKind || byResource != (len(versions) == 1) {
			t.Fatalf("answers disagree: by resource %v, by kind %v, versions %v", byResource, byKind, versions)
		}
		return byResource
	}
	steps := []struct {
		name string
		do   func()
		want bool
	}{
		{"listed by discovery", func() {}, true},
		{"its CRD seen deleted", func() { d.CRDDeleted("gadgets.example.com") }, false},
		{"after a reset, discovery still listing it", d.Reset, false},
		{"another CRD seen deleted changes nothing", func() { d.CRDDeleted("other.example.com") }, false},
		{"its CRD seen again", func() { d.CRDPresent("gadgets.example.com") }, true},
	}
	for _, s := range steps {
		s.do()
		if got := served(); got != s.want {
			t.Errorf("%s: served %v, want %v", s.name, got, s.want)
		}
	}
}
