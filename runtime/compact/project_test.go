package compact

import (
	"reflect"
	"testing"

	"k8s.io/apimachinery/pkg/runtime/schema"

	"metacel.dev/metacel/runtime/projection"
)

// A cached object projected, from JSON or from protobuf, decodes to the whole object's decode
// with only the fields kept (projection.Map), in the fields kept: what a sync reads of a projected child is what it
// would have read of the whole one, where the projection keeps it.
func TestAProjectedObjectDecodesToTheFieldsKept(t *testing.T) {
	keeps := map[string]*projection.Fields{
		"nothing but the identity": {},
		"whole":                    projection.Whole(),
		"a list's items in part": (&projection.Fields{}).Keep("spec", "containers", "name").Keep("spec", "containers", "image").
			Keep("spec", "containers", "ports", "containerPort"),
		"an inline field's fields (a volume's source)": (&projection.Fields{}).Keep("spec", "volumes", "configMap", "name"),
		"maps, quantities and int-or-strings whole": (&projection.Fields{}).Keep("spec", "nodeSelector").
			Keep("spec", "containers", "resources", "limits").Keep("spec", "ports", "targetPort").Keep("spec", "strategy"),
		"status and a few spec fields (readiness)": (&projection.Fields{}).Keep("status").Keep("spec", "replicas").Keep("spec", "parallelism").
			Keep("spec", "type").Keep("spec", "clusterIP"),
		"a secret's data":     (&projection.Fields{}).Keep("data", "password").Keep("type"),
		"a field no kind has": (&projection.Fields{}).Keep("spec", "nosuch", "field").Keep("nosuch"),
	}
	for _, obj := range builtinObjects() {
		kind := obj.GetObjectKind().GroupVersionKind().Kind
		for name, keep := range keeps {
			t.Run(kind+"/"+name, func(t *testing.T) {
				fromJSON, fromProto := cachedBothWays(t, obj)
				whole, err := Unstructured(fromJSON)
				if err != nil {
					t.Fatal(err)
				}
				want := projection.Map(whole.Object, keep)
				for encoding, o := range map[string]*Object{"JSON": fromJSON, "protobuf": fromProto} {
					p, err := o.Project(keep)
					if err != nil {
						t.Fatalf("%s: %v", encoding, err)
					}
					if len(p.Raw) > len(o.Raw) || p != o && cap(p.Raw) > len(p.Raw)+len(p.Raw)/4+16 { // an allocation size class above its length at most
						t.Errorf("%s: projected to %d bytes (capacity %d: what the cache holds) from %d", encoding, len(p.Raw), cap(p.Raw), len(o.Raw))
					}
					got, err := Unstructured(p)
					if err != nil {
						t.Fatalf("%s: %v", encoding, err)
					}
					// decoded through client-go's type, a message gains the zero values of the fields
					// its type always encodes (a Job's spec.template), where nothing is kept: nothing
					// reads them
					if got := projection.Map(got.Object, keep); !reflect.DeepEqual(got, want) {
						t.Errorf("%s: projected object\n%#v\nwant\n%#v", encoding, got, want)
					}
				}
			})
		}
	}
}

// TestAKindsMessageTypeIsFoundWithoutMakingOne: projecting a protobuf object reads its kind's
// fields; the scheme finds the kind's Go type only by making an object of it (a Pod's struct,
// about a kilobyte zeroed), which every projection of a Pod's event paid before they were kept
// by kind.
func TestAKindsMessageTypeIsFoundWithoutMakingOne(t *testing.T) {
	pod := schema.GroupVersionKind{Version: "v1", Kind: "Pod"}
	first, err := messageTypeOf(pod)
	if err != nil || first == nil {
		t.Fatalf("messageTypeOf(Pod) = %v, %v", first, err)
	}
	var again *messageType
	if allocs := testing.AllocsPerRun(100, func() { again, _ = messageTypeOf(pod) }); allocs != 0 {
		t.Errorf("messageTypeOf(Pod) allocated %v times once known, want 0", allocs)
	}
	if again != first {
		t.Errorf("messageTypeOf(Pod) gave another type the second time")
	}
	if _, err := messageTypeOf(schema.GroupVersionKind{Version: "v1", Kind: "NoSuchKind"}); err == nil {
		t.Errorf("messageTypeOf of a kind the scheme does not know: no error")
	}
}
