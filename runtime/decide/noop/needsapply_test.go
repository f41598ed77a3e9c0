package noop

import (
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"sync"
	"testing"
	"weak"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/yaml"

	"metacel.dev/metacel/runtime/contract"
)

// The fixtures in testdata are real: each *-desired.yaml was server-side applied by the field
// manager metacel to a kube-apiserver v1.36.3 (the Widget after widget-crd.yaml), and
// *-observed.yaml is the object read back, with its managed fields, defaults and what admission
// added (a service account token volume and mounts, default tolerations).

func readObject(t testing.TB, file string) *unstructured.Unstructured {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", file))
	if err != nil {
		t.Fatal(err)
	}
	return objectOf(t, string(b))
}

// objectOf parses an object written as YAML.
func objectOf(t testing.TB, text string) *unstructured.Unstructured {
	t.Helper()
	js, err := yaml.YAMLToJSON([]byte(text))
	if err != nil {
		t.Fatal(err)
	}
	u := &unstructured.Unstructured{}
	if err := u.UnmarshalJSON(js); err != nil {
		t.Fatal(err)
	}
	return u
}

func widgetCRDSchema(t testing.TB) *apiextensionsv1.JSONSchemaProps {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "widget-crd.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	crd := &apiextensionsv1.CustomResourceDefinition{}
	if err := yaml.UnmarshalStrict(b, crd); err != nil {
		t.Fatal(err)
	}
	return crd.Spec.Versions[0].Schema.OpenAPIV3Schema
}

// at returns the value at a path of string keys and int indexes.
func at(v any, path ...any) any {
	for _, p := range path {
		switch p := p.(type) {
		case string:
			v = v.(map[string]any)[p]
		case int:
			v = v.([]any)[p]
		}
	}
	return v
}

// put sets the value at a path; the last element is a key or an index.
func put(v any, value any, path ...any) {
	parent := at(v, path[:len(path)-1]...)
	switch p := path[len(path)-1].(type) {
	case string:
		parent.(map[string]any)[p] = value
	case int:
		parent.([]any)[p] = value
	}
}

func list(v any, path ...any) []any { return at(v, path...).([]any) }

// appContainerOwned is the path, in pod-observed.yaml, to the managed fields metacel holds of its
// container app.
func appContainerOwned() []any {
	return []any{"metadata", "managedFields", 0, "fieldsV1", "f:spec", "f:containers", `k:{"name":"app"}`}
}

// rehash gives desired another desired hash, as render does for a child the policy changed.
func rehash(desired map[string]any) {
	put(desired, "changed", "metadata", "annotations", contract.AnnotationDesiredHash)
}

func reversed(l []any) []any {
	out := slices.Clone(l)
	slices.Reverse(out)
	return out
}

func TestNeedsApplyFollowsTheSchema(t *testing.T) {
	const (
		pod        = "pod"
		service    = "service"
		deployment = "deployment"
		widget     = "widget" // a custom resource, with its CRD's schema
		untyped    = "widget without its schema"
	)
	container := func(i int, path ...any) []any { return append([]any{"spec", "containers", i}, path...) }
	podTemplate := func(path ...any) []any { return append([]any{"spec", "template", "spec"}, path...) }
	tests := []struct {
		name    string
		object  string
		edit    func(desired, observed map[string]any)
		changed bool
	}{
		// built-in kinds: client-go's schema
		{"a converged Pod needs no apply (defaults, a token volume and default tolerations added, 0.5 CPU stored as 500m)", pod, nil, false},
		{"an env value from 1.1 to 1.10 is a change", pod, func(d, o map[string]any) {
			put(d, "1.10", container(0, "env", 0, "value")...)
		}, true},
		{"an annotation from 1.1 to 1.10 is a change", pod, func(d, o map[string]any) {
			put(d, "1.10", "metadata", "annotations", "example.com/version")
		}, true},
		{"an env value from 1000 to 1e3 is a change", pod, func(d, o map[string]any) {
			put(d, "1e3", container(0, "env", 1, "value")...)
		}, true},
		{"500m and 0.5 on resources.limits.cpu are no change", pod, func(d, o map[string]any) {
			put(d, "0.5", container(0, "resources", "limits", "cpu")...)
			put(o, "500m", container(0, "resources", "limits", "cpu")...)
		}, false},
		{"1Gi and 1024Mi on resources.limits.memory are no change", pod, func(d, o map[string]any) {
			put(d, "1024Mi", container(0, "resources", "limits", "memory")...)
		}, false},
		{"an integer CPU limit matches the string the server stores", pod, func(d, o map[string]any) {
			put(d, int64(2), container(0, "resources", "limits", "cpu")...)
			put(o, "2", container(0, "resources", "limits", "cpu")...)
		}, false},
		{"a CPU limit from 0.5 to 0.6 is a change", pod, func(d, o map[string]any) {
			put(d, "0.6", container(0, "resources", "limits", "cpu")...)
		}, true},
		{"a token volume admission put first in a Pod's volumes is no change", pod, func(d, o map[string]any) {
			put(o, reversed(list(o, "spec", "volumes")), "spec", "volumes")
		}, false},
		{"a sidecar admission put first in a Pod's containers is no change", pod, func(d, o map[string]any) {
			put(o, append([]any{map[string]any{"name": "injected-proxy", "image": "proxy:1"}}, list(o, "spec", "containers")...), "spec", "containers")
		}, false},
		{"reordered args of a container (an atomic list) are a change", pod, func(d, o map[string]any) {
			put(d, reversed(list(d, container(0, "args")...)), container(0, "args")...)
		}, true},
		{"a toleration metacel sets, moved behind the ones admission added, is a change (tolerations are atomic)", pod, func(d, o map[string]any) {
			put(o, reversed(list(o, "spec", "tolerations")), "spec", "tolerations")
		}, true},
		{"a container metacel no longer sets is a change (by its desired hash)", pod, func(d, o map[string]any) {
			put(d, list(d, "spec", "containers")[:1], "spec", "containers")
			rehash(d)
		}, true},
		{"a volume metacel no longer sets is a change (by its desired hash)", pod, func(d, o map[string]any) {
			delete(d["spec"].(map[string]any), "volumes")
			rehash(d)
		}, true},
		{"a changed key of a port (containerPort and protocol) is a change", pod, func(d, o map[string]any) {
			put(d, "UDP", container(0, "ports", 0, "protocol")...)
		}, true},
		{"an imagePullPolicy \"\" the server defaulted (metacel owns the field) is no change", pod, func(d, o map[string]any) {
			put(d, "", container(0, "imagePullPolicy")...)
			put(o, "IfNotPresent", container(0, "imagePullPolicy")...)
			put(o, map[string]any{}, append(appContainerOwned(), "f:imagePullPolicy")...)
		}, false},
		{"an imagePullPolicy \"\" another writer set to IfNotPresent (it owns the field) is a change", pod, func(d, o map[string]any) {
			put(d, "", container(0, "imagePullPolicy")...)
			put(o, "IfNotPresent", container(0, "imagePullPolicy")...)
		}, true},
		{"hostNetwork false another writer set to true is a change, a zero the server reads as unset though it is", pod, func(d, o map[string]any) {
			put(d, false, "spec", "hostNetwork")
			put(o, true, "spec", "hostNetwork")
		}, true},
		{"an imagePullPolicy from Always to IfNotPresent is a change", pod, func(d, o map[string]any) {
			put(d, "IfNotPresent", container(0, "imagePullPolicy")...)
			put(o, "Always", container(0, "imagePullPolicy")...)
		}, true},
		{"allowPrivilegeEscalation false (a pointer: false is a value) changed to true is a change", pod, func(d, o map[string]any) {
			put(d, map[string]any{"allowPrivilegeEscalation": false}, container(0, "securityContext")...)
			put(o, map[string]any{"allowPrivilegeEscalation": true}, container(0, "securityContext")...)
		}, true},
		{"a converged Service with clusterIP, type and sessionAffinity \"\" (allocated and defaulted) needs no apply", service, nil, false},
		{"a Service's type from \"\" to NodePort is a change", service, func(d, o map[string]any) {
			put(d, "NodePort", "spec", "type")
		}, true},
		{"a converged Deployment needs no apply", deployment, nil, false},
		{"reordered containers of a Deployment are no change", deployment, func(d, o map[string]any) {
			put(d, reversed(list(d, podTemplate("containers")...)), podTemplate("containers")...)
		}, false},
		{"an env var admission put first is no change", deployment, func(d, o map[string]any) {
			env := podTemplate("containers", 0, "env")
			put(o, append([]any{map[string]any{"name": "INJECTED", "value": "1"}}, list(o, env...)...), env...)
		}, false},
		{"an env value from 010 to 10 is a change", deployment, func(d, o map[string]any) {
			put(d, "10", podTemplate("containers", 0, "env", 1, "value")...)
		}, true},
		{"an image changed in the second container is a change", deployment, func(d, o map[string]any) {
			put(d, "exporter:2.0", podTemplate("containers", 1, "image")...)
		}, true},
		{"replicas 2 and 2.0 are no change", deployment, func(d, o map[string]any) {
			put(d, float64(2), "spec", "replicas")
		}, false},

		// a custom resource: its CRD's schema
		{"a converged custom resource needs no apply", widget, nil, false},
		{"1000 and 1e3 on a CRD's int-or-string field are no change", widget, func(d, o map[string]any) {
			put(d, "1e3", "spec", "size")
		}, false},
		{"0.5 and 500m in a CRD's map of int-or-string are no change", widget, func(d, o map[string]any) {
			put(d, "0.5", "spec", "limits", "cpu")
		}, false},
		{"an int-or-string from 1000 to 1001 is a change", widget, func(d, o map[string]any) {
			put(d, "1001", "spec", "size")
		}, true},
		{"1000 to 1e3 on a CRD's string field is a change", widget, func(d, o map[string]any) {
			put(o, "1000", "spec", "version")
			put(d, "1e3", "spec", "version")
		}, true},
		{"1.1 to 1.10 on a CRD's string field is a change", widget, func(d, o map[string]any) {
			put(d, "1.10", "spec", "version")
		}, true},
		{"reordered items of a CRD's map list are no change", widget, func(d, o map[string]any) {
			put(d, reversed(list(d, "spec", "endpoints")), "spec", "endpoints")
		}, false},
		{"an item someone else put first in a CRD's map list is no change", widget, func(d, o map[string]any) {
			put(o, append([]any{map[string]any{"name": "other", "port": int64(1)}}, list(o, "spec", "endpoints")...), "spec", "endpoints")
		}, false},
		{"an item metacel no longer sets in a CRD's map list is a change (by its desired hash)", widget, func(d, o map[string]any) {
			put(d, list(d, "spec", "endpoints")[:1], "spec", "endpoints")
			rehash(d)
		}, true},
		{"reordered values of a CRD's set are no change", widget, func(d, o map[string]any) {
			put(d, reversed(list(d, "spec", "tags")), "spec", "tags")
		}, false},
		{"a value metacel no longer sets in a CRD's set is a change (by its desired hash)", widget, func(d, o map[string]any) {
			put(d, list(d, "spec", "tags")[:1], "spec", "tags")
			rehash(d)
		}, true},
		{"a field someone else removed is a change", widget, func(d, o map[string]any) {
			delete(o["spec"].(map[string]any), "version")
		}, true},
		{"reordered items of a CRD's list without a list type (atomic) are a change", widget, func(d, o map[string]any) {
			put(d, reversed(list(d, "spec", "args")), "spec", "args")
		}, true},
		{"strings under x-kubernetes-preserve-unknown-fields compare as strings", widget, func(d, o map[string]any) {
			put(d, "1.0", "spec", "extra", "items", 0, "v")
		}, true},

		// a custom resource whose schema the caller does not have
		{"without a schema, 1000 to 1e3 is a change", untyped, func(d, o map[string]any) {
			put(d, "1e3", "spec", "size")
		}, true},
		{"without a schema, 500m to 0.5 is a change", untyped, func(d, o map[string]any) {
			put(d, "0.5", "spec", "limits", "cpu")
		}, true},
		{"without a schema, a map list (managed fields list its items by key) matches by key", untyped, func(d, o map[string]any) {
			put(d, reversed(list(d, "spec", "endpoints")), "spec", "endpoints")
		}, false},
		{"without a schema, a set (managed fields list its values) matches in any order", untyped, func(d, o map[string]any) {
			put(d, reversed(list(d, "spec", "tags")), "spec", "tags")
		}, false},
		{"without a schema, an atomic list (managed fields list no items) keeps its order", untyped, func(d, o map[string]any) {
			put(d, reversed(list(d, "spec", "args")), "spec", "args")
		}, true},
	}
	crd := widgetCRDSchema(t)
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			file, s := tc.object, (*Schema)(nil)
			switch tc.object {
			case widget:
				s = SchemaFor(readObject(t, "widget-observed.yaml").GroupVersionKind(), crd)
			case untyped:
				file = widget
			default:
				s = SchemaFor(readObject(t, tc.object+"-observed.yaml").GroupVersionKind(), nil)
				if s == nil {
					t.Fatalf("no schema for %s", tc.object)
				}
			}
			desired, observed := readObject(t, file+"-desired.yaml"), readObject(t, file+"-observed.yaml")
			for _, obj := range []*unstructured.Unstructured{desired, observed} { // as render marked it
				annotations := obj.GetAnnotations()
				if annotations == nil {
					annotations = map[string]string{}
				}
				annotations[contract.AnnotationDesiredHash] = "converged"
				obj.SetAnnotations(annotations)
			}
			if tc.edit != nil {
				tc.edit(desired.Object, observed.Object)
			}
			if got := s.NeedsApply(desired, observed); got != tc.changed {
				t.Errorf("NeedsApply = %v, want %v", got, tc.changed)
			}
		})
	}
}

// BenchmarkNeedsApply measures the check every sync makes for every child: converged objects,
// as read from the API server, against their desired state.
func BenchmarkNeedsApply(b *testing.B) {
	crd := widgetCRDSchema(b)
	for _, object := range []string{"pod", "deployment", "widget"} {
		desired, observed := readObject(b, object+"-desired.yaml"), readObject(b, object+"-observed.yaml")
		var schema *apiextensionsv1.JSONSchemaProps
		if object == "widget" {
			schema = crd
		}
		b.Run(object, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if SchemaFor(desired.GroupVersionKind(), schema).NeedsApply(desired, observed) {
					b.Fatal("converged: no apply needed")
				}
			}
		})
	}
}

func TestSchemaFor(t *testing.T) {
	deployment := schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: "Deployment"}
	widget := schema.GroupVersionKind{Group: "example.com", Version: "v1", Kind: "Widget"}
	crd := widgetCRDSchema(t)

	d := SchemaFor(deployment, nil)
	if d == nil {
		t.Fatal("a built-in kind has client-go's schema")
	}
	podSpec := d.root.field("spec").field("template").field("spec")
	containers := podSpec.field("containers")
	if containers.list != listMap || !slices.Equal(containers.keys, []string{"name"}) {
		t.Errorf("containers are a map list by name: %+v", containers)
	}
	if args := containers.elem.field("args"); args.list != listAtomic {
		t.Errorf("args are an atomic list: %+v", args)
	}
	if cpu := containers.elem.field("resources").field("limits").field("cpu"); !cpu.isQuantity() {
		t.Error("resources.limits values are quantities")
	}
	if env := containers.elem.field("env").elem.field("value"); env.isQuantity() {
		t.Error("an env value is a string")
	}
	if finalizers := d.root.field("metadata").field("finalizers"); finalizers.list != listSet {
		t.Errorf("finalizers are a set: %+v", finalizers)
	}
	valueFrom := containers.elem.field("env").elem.field("valueFrom")
	if valueFrom.atomicObject || !valueFrom.field("secretKeyRef").atomicObject || !d.root.field("spec").field("selector").atomicObject {
		t.Error("a SecretKeySelector and a LabelSelector are atomic objects (+structType=atomic), an EnvVarSource is not")
	}
	if data := SchemaFor(schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"}, nil).root.field("data"); data == nil || data.atomicObject {
		t.Errorf("a ConfigMap's data is a map of its own keys: %+v", data)
	}
	if SchemaFor(deployment, nil) != d {
		t.Error("a built-in kind's schema is built once")
	}
	if SchemaFor(widget, nil) != nil {
		t.Error("a custom resource without its CRD's schema has none")
	}

	w := SchemaFor(widget, crd)
	if w == nil || SchemaFor(widget, crd) != w {
		t.Fatal("a CRD's schema is built once")
	}
	spec := w.root.field("spec")
	if !spec.field("size").isQuantity() || spec.field("version").isQuantity() || !spec.field("limits").field("any").isQuantity() {
		t.Error("int-or-string fields, and only they, are quantities")
	}
	if l := spec.field("endpoints"); l.list != listMap || !slices.Equal(l.keys, []string{"name"}) {
		t.Errorf("endpoints are a map list by name: %+v", l)
	}
	if spec.field("tags").list != listSet || spec.field("args").list != listAtomic {
		t.Error("x-kubernetes-list-type set is a set; no list type is atomic")
	}
	if spec.field("extra") != nil {
		t.Error("an object that preserves unknown fields is unknown")
	}
	if w.root.field("metadata").field("ownerReferences").list != listMap {
		t.Error("a custom resource's metadata is ObjectMeta")
	}
}

func TestSchemaForIsSafeForConcurrentUse(t *testing.T) {
	kinds := []schema.GroupVersionKind{
		{Version: "v1", Kind: "Service"}, {Group: "batch", Version: "v1", Kind: "Job"},
		{Group: "networking.k8s.io", Version: "v1", Kind: "Ingress"}, {Version: "v1", Kind: "Secret"},
	}
	crd := widgetCRDSchema(t)
	var wg sync.WaitGroup
	got := make([][]*Schema, 8)
	for g := range got {
		wg.Go(func() {
			for _, k := range kinds {
				got[g] = append(got[g], SchemaFor(k, nil))
			}
			got[g] = append(got[g], SchemaFor(schema.GroupVersionKind{}, crd))
		})
	}
	wg.Wait()
	for g := range got {
		if !slices.Equal(got[g], got[0]) || slices.Contains(got[g], nil) {
			t.Fatalf("every goroutine gets the same schemas: %v, %v", got[g], got[0])
		}
	}
}

// The cache holds a CRD's schema by a weak pointer: it does not keep the CRD alive, so that one
// collection after nobody uses it, the CRD is gone (and runtime.AddCleanup then drops its entry).
// runtime.GC returns once the collection is complete, weak pointers cleared.
func TestACRDSchemaNoLongerUsedIsForgotten(t *testing.T) {
	key := func() weak.Pointer[apiextensionsv1.JSONSchemaProps] {
		crd := widgetCRDSchema(t)
		if SchemaFor(schema.GroupVersionKind{}, crd) == nil {
			t.Fatal("no schema")
		}
		key := weak.Make(crd)
		if _, ok := crds.Load(key); !ok {
			t.Fatal("a CRD's schema is cached")
		}
		return key
	}()
	runtime.GC()
	if key.Value() != nil {
		t.Error("the cache keeps alive a CRD nobody uses")
	}
}

// A mutating webhook or admission policy may rewrite a field in metacel's own write (an image
// pinned to a digest, a label upper-cased): metacel's managed fields own what it sent, whatever
// admission stored. When that write was of the desired content (writtenAsDesired: the caller
// read the content hash), a value metacel owns whole matches whatever it holds; one another
// writer took over, or one the policy changed since, does not.
func TestContentNeedsApplyLeavesWhatAdmissionMadeOfItsWrite(t *testing.T) {
	app := func(path ...any) []any { return append([]any{"spec", "containers", 0}, path...) }
	appOwned := func(path ...any) []any { return append(appContainerOwned(), path...) }
	pinned := func(_, o map[string]any) { put(o, "busybox@sha256:abc", app("image")...) }
	tests := []struct {
		name             string
		edit             func(desired, observed map[string]any)
		writtenAsDesired bool
		changed          bool
	}{
		{"admission pinned the image in metacel's write of this content: no change", pinned, true, false},
		{"the same image, the policy's content changed since: a change", pinned, false, true},
		{"another writer took the image over: a change", func(d, o map[string]any) {
			pinned(d, o)
			delete(at(o, appOwned()...).(map[string]any), "f:image")
		}, true, true},
		{"admission rewrote a CPU limit, a scalar in an object: no change", func(_, o map[string]any) {
			put(o, "2", app("resources", "limits", "cpu")...)
		}, true, false},
		{"admission rewrote the args, a list metacel owns whole: no change", func(_, o map[string]any) {
			put(o, []any{"--port", "9090"}, app("args")...)
		}, true, false},
		{"admission rewrote an env value, in an item metacel owns: no change", func(_, o map[string]any) {
			put(o, "2.0", app("env", 0, "value")...)
		}, true, false},
		// the API server leaves a created map's own entry (".") in metacel's create entry when
		// another writer takes its fields over: read as owned whole, the drift was hidden (f9bb985)
		{"another writer changed every field of a map metacel created: a change", func(_, o map[string]any) {
			put(o, "2", app("resources", "limits", "cpu")...)
			put(o, "2Gi", app("resources", "limits", "memory")...)
			entry := at(o, "metadata", "managedFields", 0).(map[string]any)
			entry["operation"] = "Update"
			put(o, map[string]any{}, appOwned("f:resources", "f:limits")...)
		}, true, true},
		{"an env item another writer took over, its value changed: a change", func(_, o map[string]any) {
			put(o, "2.0", app("env", 0, "value")...)
			delete(at(o, appOwned("f:env")...).(map[string]any), `k:{"name":"VERSION"}`)
		}, true, true},
		{"admission rewrote a label metacel sets: no change", func(d, o map[string]any) {
			put(d, "a", "metadata", "labels", "team")
			put(o, "A", "metadata", "labels", "team")
			put(o, map[string]any{}, "metadata", "managedFields", 0, "fieldsV1", "f:metadata", "f:labels", "f:team")
		}, true, false},
		{"a label another writer changed: a change", func(d, o map[string]any) {
			put(d, "a", "metadata", "labels", "team")
			put(o, "A", "metadata", "labels", "team")
		}, true, true},
		{"a field admission removed is no value to leave: a change", func(_, o map[string]any) {
			delete(at(o, app()...).(map[string]any), "image")
		}, true, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			desired, observed := readObject(t, "pod-desired.yaml"), readObject(t, "pod-observed.yaml")
			tc.edit(desired.Object, observed.Object)
			s := SchemaFor(desired.GroupVersionKind(), nil)
			bookkeeping := func(string) bool { return false }
			if got := s.ContentNeedsApply(desired, observed, bookkeeping, bookkeeping, tc.writtenAsDesired); got != tc.changed {
				t.Errorf("ContentNeedsApply = %v, want %v", got, tc.changed)
			}
		})
	}
}

// An object the schema declares atomic (+structType=atomic in a built-in kind: an env var's
// valueFrom.secretKeyRef or configMapKeyRef; x-kubernetes-map-type: atomic in a CRD) is one value
// to server-side apply: metacel's managed fields hold it as f:secretKeyRef: {}, none of its
// fields, and another writer's change of any of them takes it over whole. What admission made of
// it in metacel's write of this content is then no change, as for a scalar or an atomic list. An
// object the schema does not declare atomic is never read so: metacel's create (Update) entry
// keeps an empty entry of a map it created whose every field others took over (a ConfigMap's
// data, a valueFrom), which reads alike (519cdbd).
func TestContentNeedsApplyLeavesWhatAdmissionMadeOfAnAtomicObject(t *testing.T) {
	const (
		pod        = "pod"
		deployment = "deployment"
		configMap  = "configmap"
		widget     = "widget"          // a custom resource whose spec.ref is x-kubernetes-map-type: atomic
		granular   = "granular widget" // the same, but spec.ref is a plain object
	)
	// the env var of the fixture that reads a Secret (COUNT in the Pod, B in the Deployment), and
	// the path of its entry in a manager's fields
	envVar := map[string][]any{
		pod:        {"spec", "containers", 0, "env", 1},
		deployment: {"spec", "template", "spec", "containers", 0, "env", 1},
	}
	envOwned := map[string][]string{
		pod:        {"f:spec", "f:containers", `k:{"name":"app"}`, "f:env", `k:{"name":"COUNT"}`},
		deployment: {"f:spec", "f:template", "f:spec", "f:containers", `k:{"name":"web"}`, "f:env", `k:{"name":"B"}`},
	}
	metacels := func(o map[string]any) map[string]any { return at(o, "metadata", "managedFields", 0).(map[string]any) }
	owned := func(object string, o map[string]any) map[string]any {
		path := []any{"fieldsV1"}
		for _, f := range envOwned[object] {
			path = append(path, f)
		}
		return at(metacels(o), path...).(map[string]any)
	}
	ref := func(object string, v map[string]any) map[string]any {
		return at(v, append(envVar[object], "valueFrom", "secretKeyRef")...).(map[string]any)
	}
	// byAnother gives another writer's Update entry, owning the field at path, to observed.
	byAnother := func(o map[string]any, path ...string) {
		fields := map[string]any{}
		leaf := fields
		for _, f := range path {
			next := map[string]any{}
			leaf[f] = next
			leaf = next
		}
		meta := o["metadata"].(map[string]any)
		meta["managedFields"] = append(meta["managedFields"].([]any), map[string]any{
			"apiVersion": o["apiVersion"], "fieldsType": "FieldsV1", "fieldsV1": fields,
			"manager": "kubectl-edit", "operation": "Update", "time": "2026-11-23T12:40:00Z",
		})
	}
	// created makes metacel's entry that of its create (POST): an Update entry, in which each
	// object it set is an entry of its own (".") besides its fields.
	created := func(object string, o map[string]any) {
		metacels(o)["operation"] = "Update"
		owned(object, o)["f:valueFrom"] = map[string]any{".": map[string]any{}, "f:secretKeyRef": map[string]any{}}
	}
	// takenOver is observed after another writer's change of the secretKeyRef: its writer owns
	// it whole, and metacel none of it (an Apply entry keeps nothing of valueFrom then).
	takenOver := func(object string, o map[string]any) {
		ref(object, o)["name"] = "other"
		delete(owned(object, o), "f:valueFrom")
		byAnother(o, append(envOwned[object], "f:valueFrom", "f:secretKeyRef")...)
	}
	tests := []struct {
		name             string
		object           string
		edit             func(object string, desired, observed map[string]any)
		writtenAsDesired bool
		changed          bool
	}{
		{"a converged secretKeyRef: no change", pod, nil, true, false},
		{"admission rewrote a secretKeyRef's name: no change", pod, func(object string, _, o map[string]any) {
			ref(object, o)["name"] = "counts-pinned"
		}, true, false},
		{"admission rewrote a secretKeyRef's key: no change", pod, func(object string, _, o map[string]any) {
			ref(object, o)["key"] = "count-v2"
		}, true, false},
		{"admission made optional true, the policy sets it false: no change", pod, func(object string, d, o map[string]any) {
			ref(object, d)["optional"] = false
			ref(object, o)["optional"] = true
		}, true, false},
		{"admission rewrote a secretKeyRef in metacel's create: no change", pod, func(object string, _, o map[string]any) {
			created(object, o)
			ref(object, o)["name"] = "counts-pinned"
		}, true, false},
		{"admission rewrote a secretKeyRef, the policy's content changed since: a change", pod, func(object string, _, o map[string]any) {
			ref(object, o)["name"] = "counts-pinned"
		}, false, true},
		{"another writer changed a secretKeyRef (it owns it now): a change", pod, func(object string, _, o map[string]any) {
			takenOver(object, o)
		}, true, true},
		// metacel's create entry keeps valueFrom, a plain object, empty: not owned whole
		{"another writer changed a secretKeyRef metacel created: a change", pod, func(object string, _, o map[string]any) {
			created(object, o)
			takenOver(object, o)
			owned(object, o)["f:valueFrom"] = map[string]any{}
		}, true, true},
		{"admission rewrote a secretKeyRef in a pod template: no change", deployment, func(object string, _, o map[string]any) {
			ref(object, o)["name"] = "counts-pinned"
		}, true, false},
		{"another writer changed a secretKeyRef in a pod template: a change", deployment, func(object string, _, o map[string]any) {
			takenOver(object, o)
		}, true, true},

		{"a converged ConfigMap metacel created: no change", configMap, nil, true, false},
		{"admission rewrote a data value metacel created: no change", configMap, func(_ string, _, o map[string]any) {
			put(o, "BLUE", "data", "color")
		}, true, false},
		// the API server keeps data's own entry in metacel's create entry: f:data: {}
		{"another writer changed every key of data metacel created: a change", configMap, func(_ string, _, o map[string]any) {
			put(o, "red", "data", "color")
			put(o, map[string]any{}, "metadata", "managedFields", 0, "fieldsV1", "f:data")
			byAnother(o, "f:data", "f:color")
		}, true, true},
		{"another writer emptied data metacel created: a change", configMap, func(_ string, _, o map[string]any) {
			put(o, map[string]any{}, "data")
			put(o, map[string]any{}, "metadata", "managedFields", 0, "fieldsV1", "f:data")
		}, true, true},

		// one entry of metacel's, f:ref: {}; the CRD's schema tells what it means
		{"admission rewrote an object the CRD declares atomic: no change", widget, func(_ string, _, o map[string]any) {
			put(o, "counts-pinned", "spec", "ref", "name")
		}, true, false},
		{"another writer changed an object the CRD declares atomic: a change", widget, func(_ string, _, o map[string]any) {
			put(o, "other", "spec", "ref", "name")
			put(o, map[string]any{}, "metadata", "managedFields", 0, "fieldsV1", "f:spec")
			byAnother(o, "f:spec", "f:ref")
		}, true, true},
		{"another writer changed every field of a plain object metacel created: a change", granular, func(_ string, _, o map[string]any) {
			put(o, "other", "spec", "ref", "name")
			byAnother(o, "f:spec", "f:ref", "f:name")
		}, true, true},
	}
	widgetSchema := func(mapType string) *apiextensionsv1.JSONSchemaProps {
		ref := apiextensionsv1.JSONSchemaProps{Type: "object", Properties: map[string]apiextensionsv1.JSONSchemaProps{
			"name": {Type: "string"}, "key": {Type: "string"},
		}}
		if mapType != "" {
			ref.XMapType = &mapType
		}
		return &apiextensionsv1.JSONSchemaProps{Type: "object", Properties: map[string]apiextensionsv1.JSONSchemaProps{
			"spec": {Type: "object", Properties: map[string]apiextensionsv1.JSONSchemaProps{"ref": ref}},
		}}
	}
	crds := map[string]*apiextensionsv1.JSONSchemaProps{widget: widgetSchema("atomic"), granular: widgetSchema("")}
	const (
		configMapDesired = `{apiVersion: v1, kind: ConfigMap, metadata: {name: app-config, namespace: default}, data: {color: blue}}`
		configMapCreated = `
apiVersion: v1
kind: ConfigMap
metadata:
  name: app-config
  namespace: default
  managedFields:
  - apiVersion: v1
    fieldsType: FieldsV1
    fieldsV1:
      f:data:
        .: {}
        f:color: {}
    manager: metacel
    operation: Update
    time: "2026-11-23T12:38:23Z"
data: {color: blue}
`
		widgetDesired = `{apiVersion: example.com/v1, kind: Widget, metadata: {name: w, namespace: default}, spec: {ref: {name: counts, key: count}}}`
		widgetCreated = `
apiVersion: example.com/v1
kind: Widget
metadata:
  name: w
  namespace: default
  managedFields:
  - apiVersion: example.com/v1
    fieldsType: FieldsV1
    fieldsV1:
      f:spec:
        .: {}
        f:ref: {}
    manager: metacel
    operation: Update
    time: "2026-11-23T12:38:23Z"
spec: {ref: {name: counts, key: count}}
`
	)
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var desired, observed *unstructured.Unstructured
			switch tc.object {
			case pod, deployment:
				desired, observed = readObject(t, tc.object+"-desired.yaml"), readObject(t, tc.object+"-observed.yaml")
				for _, v := range []map[string]any{desired.Object, observed.Object} {
					item := at(v, envVar[tc.object]...).(map[string]any)
					delete(item, "value")
					item["valueFrom"] = map[string]any{"secretKeyRef": map[string]any{"name": "counts", "key": "count"}}
				}
				own := owned(tc.object, observed.Object)
				delete(own, "f:value")
				own["f:valueFrom"] = map[string]any{"f:secretKeyRef": map[string]any{}}
			case configMap:
				desired, observed = objectOf(t, configMapDesired), objectOf(t, configMapCreated)
			case widget, granular:
				desired, observed = objectOf(t, widgetDesired), objectOf(t, widgetCreated)
			}
			if tc.edit != nil {
				tc.edit(tc.object, desired.Object, observed.Object)
			}
			s := SchemaFor(desired.GroupVersionKind(), crds[tc.object])
			if s == nil {
				t.Fatalf("no schema for %s", tc.object)
			}
			bookkeeping := func(string) bool { return false }
			if got := s.ContentNeedsApply(desired, observed, bookkeeping, bookkeeping, tc.writtenAsDesired); got != tc.changed {
				t.Errorf("ContentNeedsApply = %v, want %v", got, tc.changed)
			}
		})
	}
}
