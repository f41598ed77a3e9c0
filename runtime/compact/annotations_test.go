package compact

import (
	"maps"
	"testing"
)

// A cached object's annotations are a slice, not ObjectMeta's map: they read back as the API
// server sent them, through GetAnnotations, a copy, and in the object a decode gives.
func TestAnnotationsReadBackAsTheAPIServerSentThem(t *testing.T) {
	obj, err := decodeObject([]byte(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"c","namespace":"ns",
		"annotations":{"metacel.dev/content-hash":"abc","b":"2","kubectl.kubernetes.io/last-applied-configuration":"{}"}},"data":{"k":"v"}}`))
	if err != nil {
		t.Fatal(err)
	}
	o := obj.(*Object)
	want := map[string]string{"metacel.dev/content-hash": "abc", "b": "2"}
	for _, tc := range []struct {
		name string
		got  func() map[string]string
	}{
		{"GetAnnotations", o.GetAnnotations},
		{"a deep copy's", func() map[string]string { return o.DeepCopyObject().(*Object).GetAnnotations() }},
		{"the decoded object's", func() map[string]string {
			u, err := Unstructured(o)
			if err != nil {
				t.Fatal(err)
			}
			return u.GetAnnotations()
		}},
	} {
		if got := tc.got(); !maps.Equal(got, want) {
			t.Errorf("%s: %v, want %v", tc.name, got, want)
		}
	}
	if len(o.annotations) == 0 {
		t.Errorf("the object holds no annotations' pairs")
	}
	o.GetAnnotations()["b"] = "changed"
	if got := o.GetAnnotations()["b"]; got != "2" {
		t.Errorf("a change to GetAnnotations' map reached the cached object: b = %q", got)
	}
	copied := o.DeepCopyObject().(*Object)
	copied.SetAnnotations(map[string]string{"only": "this"})
	if !maps.Equal(o.GetAnnotations(), want) || !maps.Equal(copied.GetAnnotations(), map[string]string{"only": "this"}) {
		t.Errorf("SetAnnotations on a copy: the original's %v, the copy's %v", o.GetAnnotations(), copied.GetAnnotations())
	}
	if copied.SetAnnotations(nil); copied.GetAnnotations() != nil {
		t.Errorf("no annotations read back as %v, want nil", copied.GetAnnotations())
	}
}
