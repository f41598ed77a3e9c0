package compact

import (
	"maps"
	"testing"
	"unsafe"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// The Pods of one template, each naming its own parent in its labels, hold one slice of labels,
// and each reads back the labels the API server sent: through LabelSet, GetLabels and a decode.
func TestChildrenOfOneTemplateShareTheirLabels(t *testing.T) {
	var objs []*Object
	for _, i := range []int{64, 128, 192} { // the same shard slot: labels alike but for the parent's
		_, message := encodings(t, benchPod(i))
		o, err := decodeProtobufObject(message)
		if err != nil {
			t.Fatal(err)
		}
		objs = append(objs, o.(*Object))
	}
	for n, o := range objs {
		want := benchPod([]int{64, 128, 192}[n]).Labels
		if got := o.GetLabels(); !maps.Equal(got, want) {
			t.Errorf("%s: GetLabels %v, want %v", o.GetName(), got, want)
		}
		for k, v := range want {
			if got, ok := o.LabelSet().Lookup(k); !ok || got != v {
				t.Errorf("%s: LabelSet's %q = %q, want %q", o.GetName(), k, got, v)
			}
		}
		u, err := Unstructured(o)
		if err != nil {
			t.Fatal(err)
		}
		if got := u.GetLabels(); !maps.Equal(got, want) {
			t.Errorf("%s decoded: labels %v, want %v", o.GetName(), got, want)
		}
		if unsafe.SliceData(o.labels) != unsafe.SliceData(objs[0].labels) {
			t.Errorf("%s holds labels of its own, not those of %s", o.GetName(), objs[0].GetName())
		}
	}
}

// A label naming the object or its owner keeps the value the API server sent when a copy is
// renamed, given another UID or other owners, and the cached object keeps its own.
func TestALabelNamingTheObjectKeepsItsValueThroughARename(t *testing.T) {
	owner := metav1.OwnerReference{APIVersion: "demo/v1", Kind: "MyApp", Name: "parent", UID: "u-parent", Controller: ptr.To(true)}
	labels := map[string]string{"self": "obj", "self-uid": "u-obj", "app": "parent", "parent-uid": "u-parent", "other": "x"}
	o := NewObject(metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
		metav1.ObjectMeta{Name: "obj", UID: "u-obj", Namespace: "ns", Labels: maps.Clone(labels), OwnerReferences: []metav1.OwnerReference{owner}}, []byte(`{}`))
	for _, tt := range []struct {
		name   string
		change func(*Object)
	}{
		{"SetName", func(c *Object) { c.SetName("renamed") }},
		{"SetUID", func(c *Object) { c.SetUID("u-other") }},
		{"SetOwnerReferences", func(c *Object) { c.SetOwnerReferences(nil) }},
		{"SetOwnerReferences of another owner", func(c *Object) {
			c.SetOwnerReferences([]metav1.OwnerReference{{Name: "stranger", UID: "u-stranger", Controller: ptr.To(true)}})
		}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			c := o.DeepCopyObject().(*Object)
			tt.change(c)
			if got := c.GetLabels(); !maps.Equal(got, labels) {
				t.Errorf("the copy's labels %v, want %v", got, labels)
			}
			if got := c.LabelSet().Get("app"); got != "parent" {
				t.Errorf("the copy's app label %q, want \"parent\"", got)
			}
			if got := o.GetLabels(); !maps.Equal(got, labels) {
				t.Errorf("the cached object's labels %v, want %v", got, labels)
			}
		})
	}
}
