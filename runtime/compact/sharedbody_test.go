package compact

import (
	"fmt"
	"reflect"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/ptr"
)

func TestAMarkedBodyExpandsToTheBytesTheAPIServerSent(t *testing.T) {
	for name, tc := range map[string]struct {
		body, own, owner, marked string
	}{
		"the owner's name in a container": {`{"spec":{"containers":[{"name":"app-1"}]}}`, "app-1-pod", "app-1",
			`{"spec":{"containers":[{"name":"` + ownerNameMarker + `"}]}}`},
		"the own name holding the owner's, marked first": {`{"a":"app-1-pod","b":"app-1"}`, "app-1-pod", "app-1",
			`{"a":"` + ownNameMarker + `","b":"` + ownerNameMarker + `"}`},
		"the owner's name holding the own name, marked first": {`{"a":"app-1-pod","b":"app-1"}`, "app-1", "app-1-pod",
			`{"a":"` + ownerNameMarker + `","b":"` + ownNameMarker + `"}`},
		"a name of one letter, in keys and escapes": {`{"p":"\u0070p","spec":"up"}`, "", "p",
			`{"` + ownerNameMarker + `":"\u0070` + ownerNameMarker + `","s` + ownerNameMarker + `ec":"u` + ownerNameMarker + `"}`},
		"no owner": {`{"status":{"podName":"app-1-pod"}}`, "app-1", "",
			`{"status":{"podName":"` + ownNameMarker + `-pod"}}`},
		"neither name": {`{"spec":{"image":"nginx"}}`, "app-1", "owner", `{"spec":{"image":"nginx"}}`},
		"a marker's character already there: left as it is": {"{\"a\":\"app-1\x02\"}", "app-1", "", "{\"a\":\"app-1\x02\"}"},
	} {
		t.Run(name, func(t *testing.T) {
			marked := markNames([]byte(tc.body), tc.own, tc.owner)
			if string(marked) != tc.marked {
				t.Errorf("marked %q, want %q", marked, tc.marked)
			}
			if tc.marked != tc.body && hasMarker([]byte(tc.body)) {
				t.Fatal("a body with a marker's character was marked")
			}
			if got := expandNames(marked, tc.own, tc.owner); string(got) != tc.body && !hasMarker([]byte(tc.body)) {
				t.Errorf("expanded %q, want %q", got, tc.body)
			}
		})
	}
}

// Two MyApps whose bodies differ by their names and nothing else hold one body, and each decodes
// to what it decoded to before it shared it.
func TestParentsAlikeShareOneBody(t *testing.T) {
	objs := make([]*Object, 3)
	want := make([]*unstructured.Unstructured, 3)
	for i := range objs {
		decoded, err := decodeObject(benchMyApp(i * 60)) // their conditions changed in the same second
		if err != nil {
			t.Fatal(err)
		}
		o := decoded.(*Object)
		if want[i], err = Unstructured(o); err != nil {
			t.Fatal(err)
		}
		objs[i] = o.Shared()
	}
	if &objs[1].Raw[0] != &objs[2].Raw[0] {
		t.Errorf("the second and third MyApp hold a body each:\n%q\n%q", objs[1].Raw, objs[2].Raw)
	}
	decodeAsBefore(t, objs, want)
}

// The Pods of one template share one body, as JSON once a second Pod is alike: a decode of either
// gives what their protobuf message gave. A Pod alike no other keeps its message.
func TestChildrenOfOneTemplateShareOneBody(t *testing.T) {
	forgetShared()
	var objs []*Object
	var want []*unstructured.Unstructured
	for i := range 3 {
		o := projectedBenchPod(t, i)
		u, err := Unstructured(o)
		if err != nil {
			t.Fatal(err)
		}
		objs, want = append(objs, o.Shared()), append(want, u)
	}
	if !objs[0].Protobuf {
		t.Error("the first Pod of its template is held as JSON: it shares with none yet")
	}
	if objs[1].Protobuf || objs[2].Protobuf || &objs[1].Raw[0] != &objs[2].Raw[0] {
		t.Errorf("the second and third Pods do not share a JSON body: protobuf %v %v", objs[1].Protobuf, objs[2].Protobuf)
	}
	decodeAsBefore(t, objs, want)
}

// decodeAsBefore checks that each object shared decodes to what it decoded to before.
func decodeAsBefore(t *testing.T, objs []*Object, want []*unstructured.Unstructured) {
	t.Helper()
	for i, o := range objs {
		got, err := Unstructured(o)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got.Object, want[i].Object) {
			t.Errorf("%s %d decodes, shared, to\n%v\nnot\n%v", o.kind(), i, got.Object, want[i].Object)
		}
	}
}

// forgetShared empties the table of bodies held for sharing: what an earlier test or benchmark
// left there is not the caller's.
func forgetShared() {
	for i := range shared.slots {
		shared.slots[i].Store(nil)
	}
}

// Every built-in kind the protobuf tests know decodes, its body shared, to what its message
// decoded to (a second object alike, named apart, shares the first one's JSON).
func TestABuiltinObjectSharedDecodesAsItsMessage(t *testing.T) {
	for _, obj := range builtinObjects() {
		t.Run(obj.GetObjectKind().GroupVersionKind().Kind, func(t *testing.T) {
			for i := range 2 {
				obj.(metav1.Object).SetName(fmt.Sprintf("shared-%d", i))
				_, p := cachedBothWays(t, obj)
				want, err := Unstructured(p)
				if err != nil {
					t.Fatal(err)
				}
				got, err := Unstructured(p.Shared())
				if err != nil {
					t.Fatal(err)
				}
				if !reflect.DeepEqual(got.Object, want.Object) {
					t.Errorf("object %d decodes, shared, to\n%v\nnot\n%v", i, got.Object, want.Object)
				}
			}
		})
	}
}

// A body no other object has is held as it came, and costs nothing more (the heap benchmark
// BenchmarkCachedPod/projected/unique measures it).
func TestABodyAlikeNoOtherIsHeldAsItCame(t *testing.T) {
	pod := benchPod(7)
	pod.Spec.Containers[0].Image = "unique-image-of-this-test"
	_, message := encodings(t, pod)
	decoded, err := decodeProtobufObject(message)
	if err != nil {
		t.Fatal(err)
	}
	o := decoded.(*Object)
	if got := o.Shared(); got.Raw == nil || !got.Protobuf || &got.Raw[0] != &o.Raw[0] {
		t.Errorf("a Pod alike no other changed its body: protobuf %v", got.Protobuf)
	}
}

// A copy of a cached object renamed, or given other owners, keeps in its body the names the API
// server sent: its markers are expanded before the names change.
func TestARenamedCopyKeepsItsBody(t *testing.T) {
	for name, change := range map[string]func(o *Object){
		"renamed": func(o *Object) { o.SetName("other") },
		"another owner": func(o *Object) {
			o.SetOwnerReferences([]metav1.OwnerReference{{Name: "someone-else", Controller: ptr.To(true)}})
		},
		"as it is, alike": func(*Object) {},
	} {
		t.Run(name, func(t *testing.T) {
			meta := metav1.ObjectMeta{Name: "app-1-config", Namespace: "ns", OwnerReferences: []metav1.OwnerReference{{Name: "app-1", UID: "u-1"}}}
			cached := NewObject(metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"}, meta, []byte(`{"data":{"app":"app-1","self":"app-1-config"}}`)).Shared()
			copied := cached.DeepCopyObject().(*Object)
			change(copied)
			u, err := Unstructured(copied)
			if err != nil {
				t.Fatal(err)
			}
			if data, _, _ := unstructured.NestedStringMap(u.Object, "data"); data["app"] != "app-1" || data["self"] != "app-1-config" {
				t.Errorf("the copy's body reads %v", data)
			}
		})
	}
}
