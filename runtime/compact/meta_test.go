package compact

import (
	"context"
	"reflect"
	"runtime"
	"testing"
	"time"
	"unsafe"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/ptr"
)

// An Object is in Go's size class of 240 bytes: with TypeMeta and ObjectMeta embedded it took
// 376 (the class of 384), for every object a cache holds; with its labels, annotations and
// finalizers in three slices, 256.
func TestAnObjectTakesASizeClassOf240Bytes(t *testing.T) {
	if size := unsafe.Sizeof(Object{}); size > 240 {
		t.Errorf("an Object takes %d bytes, want at most 240", size)
	}
}

// Every field of ObjectMeta a cache keeps reads back as it was set, through NewObject and
// through metav1.Object's setters, the uncommon ones too.
func TestTheMetadataReadsBackAsItWasSet(t *testing.T) {
	created := metav1.NewTime(time.Date(2026, 11, 30, 3, 4, 5, 678, time.UTC).Local())
	deleted := metav1.NewTime(time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC).Local())
	full := metav1.ObjectMeta{
		Name: "p", GenerateName: "p-", Namespace: "ns", UID: "u-1", ResourceVersion: "42", Generation: 3,
		CreationTimestamp: created, DeletionTimestamp: &deleted, DeletionGracePeriodSeconds: ptr.To[int64](30),
		Labels: map[string]string{"app": "web"}, Annotations: map[string]string{"a": "1", "b": "2"},
		OwnerReferences: []metav1.OwnerReference{{APIVersion: "v1", Kind: "Secret", Name: "s", UID: "u-0", Controller: ptr.To(true)}},
		Finalizers:      []string{"metacel.dev/cleanup"},
	}
	for _, tt := range []struct {
		name string
		meta metav1.ObjectMeta
	}{
		{"every field", full},
		{"the common fields only", metav1.ObjectMeta{Name: "p", Namespace: "ns", UID: "u-1", ResourceVersion: "1", CreationTimestamp: created}},
		{"nothing", metav1.ObjectMeta{}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			typ := metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"}
			o := NewObject(typ, tt.meta, nil)
			if got := o.objectMeta(); !reflect.DeepEqual(got, tt.meta) {
				t.Errorf("NewObject's metadata\n%+v\nwant\n%+v", got, tt.meta)
			}
			if got := o.GetObjectKind().GroupVersionKind(); got != typ.GroupVersionKind() {
				t.Errorf("kind %v, want %v", got, typ.GroupVersionKind())
			}
			if (o.uncommon != nil) != (tt.meta.GenerateName != "" || tt.meta.DeletionGracePeriodSeconds != nil) {
				t.Errorf("uncommon fields held: %v, for generateName %q and a grace period %v", o.uncommon != nil, tt.meta.GenerateName, tt.meta.DeletionGracePeriodSeconds)
			}
			set := &Object{}
			set.GetObjectKind().SetGroupVersionKind(typ.GroupVersionKind())
			m := tt.meta
			set.SetName(m.Name)
			set.SetGenerateName(m.GenerateName)
			set.SetNamespace(m.Namespace)
			set.SetUID(m.UID)
			set.SetResourceVersion(m.ResourceVersion)
			set.SetGeneration(m.Generation)
			set.SetCreationTimestamp(m.CreationTimestamp)
			set.SetDeletionTimestamp(m.DeletionTimestamp)
			set.SetDeletionGracePeriodSeconds(m.DeletionGracePeriodSeconds)
			set.SetLabels(m.Labels)
			set.SetAnnotations(m.Annotations)
			set.SetOwnerReferences(m.OwnerReferences)
			set.SetFinalizers(m.Finalizers)
			if got := set.objectMeta(); !reflect.DeepEqual(got, tt.meta) {
				t.Errorf("the setters' metadata\n%+v\nwant\n%+v", got, tt.meta)
			}
			if set.typeMeta() != typ {
				t.Errorf("type %+v, want %+v", set.typeMeta(), typ)
			}
		})
	}
}

// A deep copy shares nothing a caller may change with the object it copies, and keeps what
// makes it an object read from the API server.
func TestADeepCopyIsTheCallersOwn(t *testing.T) {
	grace := ptr.To[int64](30)
	o := NewObject(metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"}, metav1.ObjectMeta{Name: "p", Namespace: "ns",
		GenerateName: "p-", DeletionGracePeriodSeconds: grace, Labels: map[string]string{"app": "web"}, Finalizers: []string{"f"},
		Annotations: map[string]string{"a": "1"}}, []byte(`{"data":{}}`))
	omitted := o.Omit(fetchFunc(func(context.Context, string, string) (*unstructured.Unstructured, error) { return nil, nil }))
	for _, tt := range []struct {
		name string
		obj  *Object
	}{{"an object", o}, {"an object without its body", omitted}} {
		t.Run(tt.name, func(t *testing.T) {
			c := tt.obj.DeepCopyObject().(*Object)
			if !reflect.DeepEqual(c.objectMeta(), tt.obj.objectMeta()) || c.fetches() != tt.obj.fetches() || c.typeMeta() != tt.obj.typeMeta() {
				t.Fatalf("the copy\n%+v\nof\n%+v", c.objectMeta(), tt.obj.objectMeta())
			}
			c.GetLabels()["app"] = "changed"
			c.GetFinalizers()[0] = "changed"
			*c.GetDeletionGracePeriodSeconds() = 1
			c.SetGenerateName("changed-")
			c.GetObjectKind().SetGroupVersionKind(schema.GroupVersionKind{Version: "v1", Kind: "Secret"})
			if got := tt.obj.objectMeta(); got.Labels["app"] != "web" || got.Finalizers[0] != "f" || *got.DeletionGracePeriodSeconds != 30 ||
				got.GenerateName != "p-" || tt.obj.kind() != "ConfigMap" {
				t.Errorf("a change to the copy reached the object: %+v, kind %s", got, tt.obj.kind())
			}
		})
	}
}

// Objects decoded after a garbage collection share the interned strings of those decoded
// before it: the label keys and metacel's label values are one copy in the cache, not one an
// object (package unique drops a value nobody holds a handle of).
func TestInternedStringsOutliveAGarbageCollection(t *testing.T) {
	var objs []*Object
	for i := range 2 {
		_, message := encodings(t, benchPod(i))
		o, err := decodeProtobufObject(message)
		if err != nil {
			t.Fatal(err)
		}
		objs = append(objs, o.(*Object))
		runtime.GC()
		runtime.GC()
	}
	a, b := objs[0].labels, objs[1].labels
	for i := 0; i < len(a); i += 2 {
		if unsafe.StringData(a[i]) != unsafe.StringData(b[i]) {
			t.Errorf("label key %q: a copy an object", a[i])
		}
		if internedValue(a[i]) && a[i+1] == b[i+1] && unsafe.StringData(a[i+1]) != unsafe.StringData(b[i+1]) {
			t.Errorf("label %q's value %q: a copy an object", a[i], a[i+1])
		}
	}
	if unsafe.StringData(objs[0].namespace) != unsafe.StringData(objs[1].namespace) {
		t.Error("the namespace: a copy an object")
	}
}

// A child's labels that name its parent (its UID, its name) hold the strings of its owner
// reference, not copies of them.
func TestLabelsNamingTheOwnerShareItsReferencesStrings(t *testing.T) {
	_, message := encodings(t, benchPod(3))
	decoded, err := decodeProtobufObject(message)
	if err != nil {
		t.Fatal(err)
	}
	o := decoded.(*Object)
	owner := o.ownerReferences[0]
	for key, want := range map[string]string{"app": owner.Name, "metacel.dev/parent-uid": string(owner.UID)} {
		got, ok := o.LabelSet().Lookup(key)
		if !ok || got != want || unsafe.StringData(got) != unsafe.StringData(want) {
			t.Errorf("label %q: %q, a copy of the owner reference's %q", key, got, want)
		}
	}
}
