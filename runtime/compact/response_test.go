package compact

import (
	"testing"

	"k8s.io/apimachinery/pkg/api/equality"

	"metacel.dev/metacel/runtime/projection"
)

// An object a write returned, held as a cache holds it (AsCached), reads back as the same object
// listed or watched does: what keep keeps of its body, its metadata without what the caches drop.
func TestAWriteResponseIsHeldAsTheCacheHoldsIt(t *testing.T) {
	tests := []struct {
		name string
		keep *projection.Fields
	}{
		{"whole", nil},
		{"projected", benchPodKeep()},
	}
	response, _ := encodings(t, benchPod(7))
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Responses{}.Object(response)
			if err != nil {
				t.Fatal(err)
			}
			held, err := AsCached(got, tc.keep)
			if err != nil {
				t.Fatal(err)
			}
			watched, err := Decode(response)
			if err != nil {
				t.Fatal(err)
			}
			if watched, err = watched.Project(tc.keep); err != nil {
				t.Fatal(err)
			}
			want, err := Unstructured(watched.Shared())
			if err != nil {
				t.Fatal(err)
			}
			read, err := Unstructured(held)
			if err != nil {
				t.Fatal(err)
			}
			if !equality.Semantic.DeepEqual(want.Object, read.Object) {
				t.Errorf("held as the cache holds it:\n%v\nwant, as watched:\n%v", read.Object, want.Object)
			}
			if tc.keep != nil && read.Object["spec"].(map[string]any)["volumes"] != nil {
				t.Error("the spec's volumes are held, which the projection drops")
			}
			if entries := read.GetManagedFields(); len(entries) != 1 || entries[0].FieldsV1 == nil {
				t.Errorf("managed fields %v, want metacel's entry with its fields", entries)
			}
		})
	}
}

// Pods alike held as their cache holds them (AsCached) hold one body, as the children remembered
// after a burst of creates do.
func TestPodsHeldAlikeHoldOneBody(t *testing.T) {
	forgetShared()
	var held []*Object
	for i := range 2 {
		response, _ := encodings(t, benchPod(i))
		got, err := Responses{}.Object(response)
		if err != nil {
			t.Fatal(err)
		}
		o, err := AsCached(got, benchPodKeep())
		if err != nil {
			t.Fatal(err)
		}
		held = append(held, o)
	}
	if &held[0].Raw[0] != &held[1].Raw[0] {
		t.Error("two Pods alike hold a body each")
	}
}
