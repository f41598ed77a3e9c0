//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"reflect"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/version"
	"k8s.io/client-go/tools/cache"
	"sigs.k8s.io/yaml"

	"metacel.dev/metacel/runtime/apply"
	"metacel.dev/metacel/runtime/compact"
)

// protobufObjects are built-in objects whose fields encode differently in JSON and in Go
// (quantities, int-or-strings, bytes, times, defaults the API server adds), labelled for the
// test's informers.
const protobufObjects = `
- apiVersion: v1
  kind: ConfigMap
  metadata: {name: cm, labels: {e2e.metacel.dev/protobuf: "true"}}
  data: {a: "1"}
  binaryData: {b: AQID}
- apiVersion: v1
  kind: Secret
  metadata: {name: secret, labels: {e2e.metacel.dev/protobuf: "true"}}
  data: {password: czNjcgB0}
- apiVersion: v1
  kind: Service
  metadata: {name: svc, labels: {e2e.metacel.dev/protobuf: "true"}}
  spec:
    selector: {app: a}
    ports: [{name: http, port: 80, targetPort: http}, {name: metrics, port: 9090, targetPort: 9090}]
- apiVersion: v1
  kind: Pod
  metadata: {name: pod, labels: {e2e.metacel.dev/protobuf: "true"}}
  spec:
    containers:
      - name: app
        image: nginx:1.27
        ports: [{name: http, containerPort: 8080}]
        resources: {limits: {cpu: "0.5", memory: 1Gi}, requests: {cpu: 100m}}
        readinessProbe: {httpGet: {path: /, port: http}}
- apiVersion: apps/v1
  kind: Deployment
  metadata: {name: deploy, labels: {e2e.metacel.dev/protobuf: "true"}}
  spec:
    replicas: 2
    selector: {matchLabels: {app: a}}
    strategy: {rollingUpdate: {maxSurge: 25%, maxUnavailable: 0}}
    template:
      metadata: {labels: {app: a}}
      spec: {containers: [{name: app, image: nginx:1.27}]}
`

// A built-in object that runtime/compact caches from kube-apiserver's protobuf decodes to the
// very object the API server gives as JSON (slimmed as every cached object is): what a sync
// compares and writes cannot depend on the encoding the cache came in.
func TestACachedBuiltinObjectIsTheAPIServersJSON(t *testing.T) {
	ns := newNamespace(t, "protobuf")
	var objs []*unstructured.Unstructured
	if err := yaml.Unmarshal([]byte(protobufObjects), &objs); err != nil {
		t.Fatal(err)
	}
	server, err := cluster.kube.Discovery().ServerVersion()
	if err != nil {
		t.Fatal(err)
	}
	if !compact.ProtobufServer(server) {
		t.Fatalf("kube-apiserver %s: want the built-in kinds as protobuf from it", server)
	}
	lister, err := compact.NewClient(cluster.config, server, 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, obj := range objs {
		gvr := schema.GroupVersionResource{Group: obj.GroupVersionKind().Group, Version: obj.GroupVersionKind().Version,
			Resource: map[string]string{"ConfigMap": "configmaps", "Secret": "secrets", "Service": "services", "Pod": "pods", "Deployment": "deployments"}[obj.GetKind()]}
		t.Run(obj.GetKind(), func(t *testing.T) {
			if !compact.ProtobufFor(gvr) {
				t.Fatalf("%s is not listed as protobuf", gvr)
			}
			obj.SetNamespace(ns)
			create(t, gvr, obj)
			inf := cache.NewSharedIndexInformer(lister.ListWatch(gvr, "e2e.metacel.dev/protobuf=true"), &compact.Object{}, 0, cache.Indexers{})
			ctx, cancel := context.WithCancel(t.Context())
			defer cancel()
			go inf.RunWithContext(ctx)
			// the API server (the scheduler, kwok, the controller-manager) may move it on: compare
			// the cached object with the API server's at the same resourceVersion
			eventually(t, 30*time.Second, "the cached object is the API server's", cachedAsTheAPIServerHasIt(t, inf, gvr, ns, obj.GetName(), true, nil))
		})
	}
}

// cachedAsTheAPIServerHasIt checks that an informer caches an object of gvr as the API server has
// it (slimmed), compared at the same resourceVersion (the API server's components may move it
// on), as protobuf or as JSON, the API server's object passing checkLive (nil: any); for
// eventually: an error while the cache is behind, a failed test when it differs.
func cachedAsTheAPIServerHasIt(t *testing.T, inf cache.SharedIndexInformer, gvr schema.GroupVersionResource, ns, name string, protobuf bool, checkLive func(live *unstructured.Unstructured)) func() error {
	return func() error {
		cached, ok, _ := inf.GetStore().GetByKey(ns + "/" + name)
		if !ok {
			return fmt.Errorf("not cached yet")
		}
		if got := cached.(*compact.Object).Protobuf; got != protobuf {
			t.Fatalf("cached as protobuf: %v, want %v", got, protobuf)
		}
		live, err := get(t, gvr, ns, name)
		if err != nil {
			return err
		}
		got, err := compact.Unstructured(cached)
		if err != nil {
			t.Fatal(err)
		}
		if got.GetResourceVersion() != live.GetResourceVersion() {
			return fmt.Errorf("cached at resourceVersion %s, the API server at %s", got.GetResourceVersion(), live.GetResourceVersion())
		}
		if checkLive != nil {
			checkLive(live)
		}
		if want := compact.Slim(live); !reflect.DeepEqual(got.Object, want.Object) {
			t.Fatalf("cached\n%v\nthe API server's\n%v", got.Object, want.Object)
		}
		return nil
	}
}

// A child that metacel applied names its owner in its managed fields, which a cache keeps as a
// template of the owner's UID and name (runtime/compact, managed.go), and another manager's
// fields, which it drops: the cached child, as JSON and as protobuf, decodes to the API server's
// object (slimmed).
func TestACachedChildKeepsMetacelsManagedFieldsAsTheAPIServerHasThem(t *testing.T) {
	ns := newNamespace(t, "managed")
	cms := schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}
	owner := create(t, cms, &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "ConfigMap",
		"metadata": map[string]any{"name": "app-7", "namespace": ns}}})
	for _, name := range []string{"app-7-a", "app-7-b"} {
		child := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "ConfigMap",
			"metadata": map[string]any{"name": name, "namespace": ns,
				"labels": map[string]any{"e2e.metacel.dev/managed": "true", "parent-uid": string(owner.GetUID())},
				"ownerReferences": []any{map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "name": owner.GetName(),
					"uid": string(owner.GetUID()), "controller": true}}},
			"data": map[string]any{owner.GetName(): "the owner's name as a key"}}}
		if _, err := cluster.dynamic.Resource(cms).Namespace(ns).Apply(t.Context(), name, child, metav1.ApplyOptions{FieldManager: apply.FieldManager, Force: true}); err != nil {
			t.Fatal(err)
		}
		other := []byte(`{"data":{"other":"x"}}`)
		if _, err := cluster.dynamic.Resource(cms).Namespace(ns).Patch(t.Context(), name, types.MergePatchType, other, metav1.PatchOptions{FieldManager: "someone-else"}); err != nil {
			t.Fatal(err)
		}
	}
	server, err := cluster.kube.Discovery().ServerVersion()
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name   string
		server *version.Info // nil: every kind as JSON
	}{{"JSON", nil}, {"protobuf", server}} {
		t.Run(tc.name, func(t *testing.T) {
			lister, err := compact.NewClient(cluster.config, tc.server, 0)
			if err != nil {
				t.Fatal(err)
			}
			inf := cache.NewSharedIndexInformer(lister.ListWatch(cms, "e2e.metacel.dev/managed=true"), &compact.Object{}, 0, cache.Indexers{})
			ctx, cancel := context.WithCancel(t.Context())
			defer cancel()
			go inf.RunWithContext(ctx)
			for _, name := range []string{"app-7-a", "app-7-b"} {
				eventually(t, 30*time.Second, name+" cached as the API server has it", cachedAsTheAPIServerHasIt(t, inf, cms, ns, name, tc.server != nil, func(live *unstructured.Unstructured) {
					if len(live.GetManagedFields()) != 2 {
						t.Fatalf("the API server's managed fields: %d entries, want metacel's and another's", len(live.GetManagedFields()))
					}
				}))
			}
		})
	}
}
