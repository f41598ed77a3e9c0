package conversion

import (
	"context"
	"fmt"
	"os"
	"reflect"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"metacel.dev/metacel/runtime/contract"
	"metacel.dev/metacel/runtime/kinds"
	"metacel.dev/metacel/runtime/policy"
)

func loadCache(t *testing.T) *Converter { return loadCacheB(t) }

func loadCacheB(t testing.TB) *Converter {
	t.Helper()
	data, err := os.ReadFile("testdata/cache.yaml")
	if err != nil {
		t.Fatal(err)
	}
	cs, err := policy.Load("testdata/cache.yaml", data, kinds.NewCatalog())
	if err != nil {
		t.Fatal(err)
	}
	if cs[0].Conversion == nil {
		t.Fatal("the policy declares versions, but has no conversion")
	}
	cv, err := New(cs[0].Conversion)
	if err != nil {
		t.Fatal(err)
	}
	return cv
}

func object(apiVersion string, spec map[string]any, annotations map[string]string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": apiVersion, "kind": "Cache",
		"metadata": map[string]any{"name": "c", "namespace": "ns"},
		"spec":     spec,
		"status": map[string]any{"observedGeneration": int64(2), "conditions": []any{
			map[string]any{"type": "Ready", "status": "True"},
		}},
	}}
	if annotations != nil {
		u.SetAnnotations(annotations)
	}
	return u
}

func TestAParentConvertsBetweenVersions(t *testing.T) {
	cv := loadCache(t)
	old := object("versions.example.com/v1alpha1", map[string]any{"size": "3", "image": "redis:7"}, nil)
	hub := object("versions.example.com/v1", map[string]any{"replicas": int64(3), "template": map[string]any{"image": "redis:7"}}, nil)
	withPolicy := object("versions.example.com/v1", map[string]any{"replicas": int64(3), "template": map[string]any{"image": "redis:7", "pullPolicy": "Always"}}, nil)
	keptPolicy := object("versions.example.com/v1alpha1", map[string]any{"size": "3", "image": "redis:7"},
		map[string]string{contract.AnnotationKeptPrefix + "v1": `{"spec.template.pullPolicy":"Always"}`})
	tests := []struct {
		name string
		in   *unstructured.Unstructured
		to   string
		want *unstructured.Unstructured
	}{
		{"an old parent becomes one of the policy's version", old, "versions.example.com/v1", hub},
		{"and back", hub, "versions.example.com/v1alpha1", old},
		{"a field the old version cannot hold is kept in an annotation", withPolicy, "versions.example.com/v1alpha1", keptPolicy},
		{"and put back when it converts back", keptPolicy, "versions.example.com/v1", withPolicy},
		{"an object at the version asked for is returned as it is", old, "versions.example.com/v1alpha1", old},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			before := tc.in.DeepCopy()
			got, err := cv.Convert(context.Background(), tc.in, tc.to)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got.Object, tc.want.Object) {
				t.Errorf("Convert() =\n%v\nwant\n%v", got.Object, tc.want.Object)
			}
			if !reflect.DeepEqual(before.Object, tc.in.Object) {
				t.Errorf("Convert modified its input: %v", tc.in.Object)
			}
		})
	}
}

func TestAConversionThatFailsNamesTheObjectAndWhy(t *testing.T) {
	cv := loadCache(t)
	tests := []struct {
		name string
		in   *unstructured.Unstructured
		to   string
		want string
	}{
		{"a value the expression cannot convert", object("versions.example.com/v1alpha1", map[string]any{"size": "three", "image": "x"}, nil),
			"versions.example.com/v1", `convert Cache "ns/c" from v1alpha1 to v1: spec`},
		{"a version the policy does not declare", object("versions.example.com/v2", map[string]any{}, nil),
			"versions.example.com/v1", `Cache has no version "v2": its versions are v1, v1alpha1`},
		{"another group", object("versions.example.com/v1", map[string]any{}, nil),
			"other.example.com/v1", `is not of the group "versions.example.com"`},
		{"a result its version does not hold", object("versions.example.com/v1", map[string]any{"replicas": int64(-1), "template": map[string]any{"image": "x"}}, nil),
			"versions.example.com/v1alpha1", `the result is not a valid v1alpha1 Cache`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := cv.Convert(context.Background(), tc.in, tc.to)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Convert() error = %v, want it to say %q", err, tc.want)
			}
		})
	}
}

func TestARoundTripThatLosesAFieldSaysWhichAndHow(t *testing.T) {
	cv := loadCache(t)
	hub := object("versions.example.com/v1", map[string]any{"replicas": int64(3), "template": map[string]any{"image": "redis:7", "pullPolicy": "Always"}}, nil)
	if err := cv.RoundTrip(context.Background(), hub); err != nil {
		t.Errorf("a lossless conversion: RoundTrip() = %v", err)
	}
	lossy := *cv.c.Versions["v1alpha1"]
	lossy.FromHub.Keep = nil
	cv.c = &policy.CompiledConversion{Group: cv.c.Group, Kind: cv.c.Kind, Hub: cv.c.Hub, HubSchema: cv.c.HubSchema, Versions: map[string]*policy.CompiledVersion{"v1alpha1": &lossy}}
	err := cv.RoundTrip(context.Background(), hub)
	if err == nil || !strings.Contains(err.Error(), `a round trip through v1alpha1 changes Cache "ns/c": spec was`) {
		t.Errorf("a conversion that drops pullPolicy: RoundTrip() = %v", err)
	}
}

// A field of the policy's version that is required and has a default, which the older version
// has no field for (kept on the way down): an object created at the older version converts
// without it, and the API server gives it its default when it reads the result. The converter
// refused every such object ("Required value"), so in a cluster every create at the older
// version failed.
func TestAConversionLeavesADefaultedFieldToItsDefault(t *testing.T) {
	cv := cacheConverter(t,
		"          pullPolicy: {type: string, enum: [Always, IfNotPresent, Never]}\n",
		"          pullPolicy: {type: string, enum: [Always, IfNotPresent, Never]}\n      mode: {type: string, default: fast, required: true}\n",
		"keep: [spec.template.pullPolicy]", "keep: [spec.template.pullPolicy, spec.mode]")
	got, err := cv.Convert(context.Background(), object("versions.example.com/v1alpha1", map[string]any{"size": "3", "image": "redis:7"}, nil), "versions.example.com/v1")
	if err != nil {
		t.Fatalf("Convert() error = %v, want the object converted, mode left to its default", err)
	}
	if mode, found, _ := unstructured.NestedString(got.Object, "spec", "mode"); found {
		t.Errorf("spec.mode = %q, want it left out: the API server defaults it", mode)
	}
}

// A whole number in a number field of the version converted from is read as the double its
// schema types: the conversion's expression failed on it (no such overload), and the API server
// could not serve the object at the other version.
func TestAConversionReadsAWholeNumberAsADouble(t *testing.T) {
	cv := cacheConverter(t,
		"          pullPolicy: {type: string, enum: [Always, IfNotPresent, Never]}\n",
		"          pullPolicy: {type: string, enum: [Always, IfNotPresent, Never]}\n      weight: number\n",
		"          image: {type: string, required: true}\n        toHub:\n",
		"          image: {type: string, required: true}\n          weight: number\n        toHub:\n",
		"            template:\n              image: ${parent.spec.image}\n",
		"            weight: ${parent.spec.?weight.orValue(1.0) * 1.0}\n            template:\n              image: ${parent.spec.image}\n",
		"            image: ${parent.spec.template.image}\n          keep:",
		"            image: ${parent.spec.template.image}\n            weight: ${parent.spec.?weight.orValue(1.0) * 1.0}\n          keep:")
	got, err := cv.Convert(context.Background(), object("versions.example.com/v1alpha1", map[string]any{"size": "3", "image": "redis:7", "weight": int64(2)}, nil), "versions.example.com/v1")
	if err != nil {
		t.Fatalf("Convert() error = %v, want the whole number read as a double", err)
	}
	if w, _, _ := unstructured.NestedFieldNoCopy(got.Object, "spec", "weight"); w != 2.0 {
		t.Errorf("spec.weight = %v, want 2.0", w)
	}
}

// cacheConverter is the converter of the example policy (testdata/cache.yaml) with each pair of
// old → new replaced once.
func cacheConverter(t *testing.T, pairs ...string) *Converter {
	t.Helper()
	data, err := os.ReadFile("testdata/cache.yaml")
	if err != nil {
		t.Fatal(err)
	}
	text := string(data)
	for i := 0; i < len(pairs); i += 2 {
		if !strings.Contains(text, pairs[i]) {
			t.Fatalf("the example has no %q", pairs[i])
		}
		text = strings.Replace(text, pairs[i], pairs[i+1], 1)
	}
	cs, err := policy.Load("cache.yaml", []byte(text), kinds.NewCatalog())
	if err != nil {
		t.Fatal(err)
	}
	cv, err := New(cs[0].Conversion)
	if err != nil {
		t.Fatal(err)
	}
	return cv
}

// A kept integer came back as a float64: the annotation was decoded with encoding/json. `metacel
// validate`'s round trip then failed on every parent with a kept integer, and one above 2^53 came
// back another number, which the integer field refused.
func TestAKeptIntegerComesBackTheSameInteger(t *testing.T) {
	cv := cacheConverter(t,
		"          pullPolicy: {type: string, enum: [Always, IfNotPresent, Never]}\n",
		"          pullPolicy: {type: string, enum: [Always, IfNotPresent, Never]}\n      seed: integer\n",
		"keep: [spec.template.pullPolicy]", "keep: [spec.template.pullPolicy, spec.seed]")
	for _, seed := range []int64{3, 1<<53 + 1} {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			hub := object("versions.example.com/v1", map[string]any{"replicas": int64(3), "seed": seed, "template": map[string]any{"image": "redis:7"}}, nil)
			if err := cv.RoundTrip(t.Context(), hub); err != nil {
				t.Errorf("RoundTrip: %v", err)
			}
		})
	}
}

// A kept field of 300,000 characters made an annotation over the API server's 256 KiB limit for
// all annotations, and the conversion returned it as a success: the API server then refused the
// object. The conversion fails, naming the field kept.
func TestAKeptFieldTooLargeForAnAnnotationFailsTheConversion(t *testing.T) {
	cv := cacheConverter(t,
		"          pullPolicy: {type: string, enum: [Always, IfNotPresent, Never]}\n",
		"          pullPolicy: {type: string, enum: [Always, IfNotPresent, Never]}\n      notes: {type: string, maxLength: 400000}\n",
		"keep: [spec.template.pullPolicy]", "keep: [spec.template.pullPolicy, spec.notes]")
	tests := []struct {
		name  string
		notes string
		want  string // "": converts
	}{
		{name: "a small kept field", notes: "x"},
		{name: "a kept field over the limit", notes: strings.Repeat("x", 300000),
			want: `convert Cache "ns/c" from v1 to v1alpha1: keep spec.notes in the annotation metacel.dev/kept-v1 (300017 bytes), which the API server would refuse: metadata.annotations: Too long: may not be more than 262144 bytes`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			hub := object("versions.example.com/v1", map[string]any{"replicas": int64(3), "notes": tt.notes, "template": map[string]any{"image": "redis:7"}}, nil)
			_, err := cv.Convert(t.Context(), hub, "versions.example.com/v1alpha1")
			if tt.want == "" && err != nil || tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)) {
				t.Errorf("Convert() = %v, want %q", err, tt.want)
			}
		})
	}
}
