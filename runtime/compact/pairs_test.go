package compact

import (
	"fmt"
	"maps"
	"slices"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
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
	if len(o.annotations()) == 0 {
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

// A cached object's labels are a slice too: they read back as the API server sent them, through
// GetLabels, a copy, the decoded object and LabelSet, which reads them without building a map.
func TestLabelsReadBackAsTheAPIServerSentThem(t *testing.T) {
	obj, err := decodeObject([]byte(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"c","namespace":"ns",
		"labels":{"metacel.dev/parent-uid":"u-1","app":"web","metacel.dev/child-id":"cm"}},"data":{"k":"v"}}`))
	if err != nil {
		t.Fatal(err)
	}
	o := obj.(*Object)
	want := map[string]string{"metacel.dev/parent-uid": "u-1", "app": "web", "metacel.dev/child-id": "cm"}
	for _, tc := range []struct {
		name string
		got  func() map[string]string
	}{
		{"GetLabels", o.GetLabels},
		{"a deep copy's", func() map[string]string { return o.DeepCopyObject().(*Object).GetLabels() }},
		{"the decoded object's", func() map[string]string {
			u, err := Unstructured(o)
			if err != nil {
				t.Fatal(err)
			}
			return u.GetLabels()
		}},
	} {
		if got := tc.got(); !maps.Equal(got, want) {
			t.Errorf("%s: %v, want %v", tc.name, got, want)
		}
	}
	set := o.LabelSet()
	for k, v := range want {
		if got, ok := set.Lookup(k); !ok || got != v || !set.Has(k) || set.Get(k) != v {
			t.Errorf("LabelSet's %s: %q, %v, want %q", k, got, ok, v)
		}
	}
	if _, ok := set.Lookup("absent"); ok || set.Has("absent") || set.Get("absent") != "" {
		t.Error("LabelSet has a label the object has not")
	}
	if allocs := testing.AllocsPerRun(100, func() { _ = o.LabelSet().Get("metacel.dev/parent-uid") }); allocs != 0 {
		t.Errorf("reading a label through LabelSet allocated %.0f times", allocs)
	}
	o.GetLabels()["app"] = "changed"
	if got := o.GetLabels()["app"]; got != "web" {
		t.Errorf("a change to GetLabels' map reached the cached object: app = %q", got)
	}
	copied := o.DeepCopyObject().(*Object)
	if copied.SetLabels(nil); copied.GetLabels() != nil || !maps.Equal(o.GetLabels(), want) {
		t.Errorf("SetLabels(nil) on a copy: the copy's %v, the original's %v", copied.GetLabels(), o.GetLabels())
	}
}

// pairsOf sorts the pairs by key however many there are: in place for a few, by their keys for
// more.
func TestPairsAreSortedByKey(t *testing.T) {
	for _, n := range []int{0, 1, 2, 7, maxSortedInPlace, maxSortedInPlace + 1, 100} {
		m := map[string]string{}
		for i := range n {
			m[fmt.Sprintf("k%03d", (i*37)%101)] = fmt.Sprint(i)
		}
		p := pairsOf(m)
		if got := p.asMap(); len(p) != 2*n || (n > 0 && !maps.Equal(got, m)) {
			t.Fatalf("%d pairs: %v, want %v", n, p, m)
		}
		for i := 2; i < len(p); i += 2 {
			if p[i-2] >= p[i] {
				t.Errorf("%d pairs: key %q before %q", n, p[i-2], p[i])
			}
		}
	}
}

// An object holds its labels, annotations and finalizers in one slice: setting one leaves the
// others as they were, a finalizer appended to GetFinalizers' slice does not become a label, and
// a finalizer changed in a deep copy does not reach the cached object.
func TestLabelsAnnotationsAndFinalizersAreSetApart(t *testing.T) {
	labels, annotations := map[string]string{"app": "web", "tier": "front"}, map[string]string{"a": "1"}
	finalizers := []string{"metacel.dev/cleanup", "example.com/other"}
	o := NewObject(metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
		metav1.ObjectMeta{Name: "c", Namespace: "ns", Labels: labels, Annotations: annotations, Finalizers: finalizers}, []byte(`{}`))
	check := func(step string, wantLabels, wantAnnotations map[string]string, wantFinalizers []string) {
		t.Helper()
		if !maps.Equal(o.GetLabels(), wantLabels) || !maps.Equal(o.GetAnnotations(), wantAnnotations) || !slices.Equal(o.GetFinalizers(), wantFinalizers) {
			t.Errorf("%s: labels %v, annotations %v, finalizers %v; want %v, %v, %v", step,
				o.GetLabels(), o.GetAnnotations(), o.GetFinalizers(), wantLabels, wantAnnotations, wantFinalizers)
		}
	}
	check("as made", labels, annotations, finalizers)

	_ = append(o.GetFinalizers(), "appended")
	check("after an append to GetFinalizers' slice", labels, annotations, finalizers)

	copied := o.DeepCopyObject().(*Object)
	copied.GetFinalizers()[0] = "changed.example.com/in-place"
	check("after a copy's finalizer changed in place", labels, annotations, finalizers)

	o.SetLabels(map[string]string{"only": "this"})
	check("after SetLabels", map[string]string{"only": "this"}, annotations, finalizers)
	o.SetAnnotations(nil)
	check("after SetAnnotations(nil)", map[string]string{"only": "this"}, nil, finalizers)
	o.SetFinalizers(nil)
	check("after SetFinalizers(nil)", map[string]string{"only": "this"}, nil, nil)
	if got := o.LabelSet().Get("only"); got != "this" {
		t.Errorf("LabelSet: only = %q, want \"this\"", got)
	}
	o.SetLabels(nil)
	if o.labels != nil || o.strs != nil {
		t.Errorf("an object with no labels, annotations nor finalizers holds %v and %v", o.labels, o.strs)
	}
}
